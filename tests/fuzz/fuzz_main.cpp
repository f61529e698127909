// libFuzzer's entry point for one target, chosen at build time (CTK_FUZZ_TARGET): built by CMake's
// CTK_FUZZ option with clang's -fsanitize=fuzzer,address; see scripts/fuzz.sh.
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const ctk::fuzz::Target& t = ctk::fuzz::target(CTK_FUZZ_TARGET);
    t.run(data, size);
    return 0;
}
