#!/usr/bin/env bash
# The main job: installs dependencies (PyTorch too, for the comparison), builds ctk and runs the
# benchmark harness against PyTorch on this machine. (Once the training issue lands, this trains the
# MNIST ConvNet on Fashion-MNIST and prints CNTK's log instead.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --bench
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${CTK_JOBS:-$(nproc)}" --target ctk_bench
/usr/bin/python3 bench/compare.py --ctk-bench build/bench/ctk_bench "$@"
