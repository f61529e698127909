// libFuzzer's entry point for one target, chosen at build time (CTK_FUZZ_TARGET): built by CMake's
// CTK_FUZZ option with clang's -fsanitize=fuzzer,address; see scripts/fuzz.sh.
#include "ctk/parallel.h"
#include "ctk/storage.h"
#include "fuzz/fuzz_targets.h"

// One compute thread: libFuzzer runs one input at a time, and idle OpenMP workers spinning between the
// readers' small parallel loops took a fifth of the ONNX target's time. No CPU block cache: it keeps
// freed blocks of every size an input asked for (up to 2 GiB), which libFuzzer's RSS limit took for an
// input allocating without bound after a few million runs; without it the RSS is one input's.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    ctk::set_num_threads(1);
    ctk::cpu_allocator().set_cache_limit(0);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const ctk::fuzz::Target& t = ctk::fuzz::target(CTK_FUZZ_TARGET);
    t.run(data, size);
    return 0;
}
