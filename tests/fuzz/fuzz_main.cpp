// libFuzzer's entry point for one target, chosen at build time (CTK_FUZZ_TARGET): built by CMake's
// CTK_FUZZ option with clang's -fsanitize=fuzzer,address; see scripts/fuzz.sh.
#include "ctk/core/parallel.h"
#include "ctk/core/storage.h"
#include "fuzz/fuzz_targets.h"

// One compute thread: libFuzzer runs one input at a time, and idle OpenMP workers spinning between the
// readers' small parallel loops took a fifth of the ONNX target's time. A CPU block cache of 256 MiB:
// at its default 2 GiB it kept freed blocks of every size inputs asked for, which libFuzzer's 2 GiB RSS
// limit took for an input allocating without bound after a few million runs; with none, every large
// block is mapped and zeroed afresh (the CBF target ran 30 times slower).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    ctk::set_num_threads(1);
    ctk::cpu_allocator().set_cache_limit(size_t(256) << 20);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const ctk::fuzz::Target& t = ctk::fuzz::target(CTK_FUZZ_TARGET);
    t.run(data, size);
    return 0;
}
