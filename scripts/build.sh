#!/usr/bin/env bash
# The release build of the test command (warnings are errors, the Python package included), also what
# the container images build. Usage: scripts/build.sh [BUILD_DIR (default build)] [extra CMake options]
# CTK_JOBS sets the parallel jobs (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTK_WARNINGS_AS_ERRORS=ON -DCTK_BUILD_PYTHON=ON "$@" >/dev/null
cmake --build "$dir" -j "${CTK_JOBS:-$(nproc)}"
