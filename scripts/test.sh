#!/usr/bin/env bash
# Runs every test: installs dependencies, builds ctk and its Python module with warnings as errors and
# runs the whole suite (the pytest suite too), then rebuilds the unit tests with AddressSanitizer +
# UndefinedBehaviorSanitizer (without Python: the interpreter is not built with ASan) and runs them again.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=${CTK_JOBS:-$(nproc)}

echo "== release build (warnings are errors) =="
CTK_JOBS=$jobs scripts/build.sh build
ctest --test-dir build -j "$jobs" --output-on-failure

# The sanitizer build leaves the CUDA backend and MPI out: it tests the CPU-only, one-worker
# configuration (the CUDA runtime does not run under ASan, and OpenMPI's own allocations would fill
# LeakSanitizer's report).
echo "== sanitizer build (ASan + UBSan, CPU only) =="
# -O1 -g1 (line tables only): half the compile time of -O2 -g on this 2-core machine, and ASan's
# reports still name file and line.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DCTK_SANITIZE=ON -DCTK_BUILD_BENCH=OFF -DCTK_USE_CUDA=OFF -DCTK_BUILD_PYTHON=OFF -DCTK_USE_MPI=OFF \
      -DCTK_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build-asan -j "$jobs"
# allocator_may_return_null: the out-of-memory tests ask for absurd sizes on purpose.
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp
ctest --test-dir build-asan -j "$jobs" -L unit --output-on-failure
