#!/usr/bin/env bash
# Packs what a GPU machine needs to run ctk's GPU checks into gpukit/kit.tar.xz (ignored by git): the
# gpu-labelled test binaries, ctk_bench, the ctk CLI, the MNIST examples, and the shared libraries they
# load that a bare CUDA image lacks (oneDNN, OpenBLAS, protobuf and their runtimes). Debian's
# Fashion-MNIST files (dataset-fashion-mnist, 30 MB), when installed here, go beside it in
# gpukit/fashion-mnist for the examples (the machine cannot fetch them). The device tool carries it with
# `carry: ["gpukit"]`; scripts/gpu_kit_run.sh unpacks and runs it there. The kit stays under the tool's
# 64 MiB limit (about 25 MB): the test binaries share most of their bytes, and one solid xz stream
# stores them once.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTK_WARNINGS_AS_ERRORS=ON
fi
binaries=(tests/cuda_test tests/op_harness_gpu_test tests/graph_harness_gpu_test tests/learners/learner_gpu_test
          tests/train/train_gpu_test tests/train/mixed_precision_gpu_test tests/train/cuda_graph_gpu_test
          bench/ctk_bench cli/ctk examples/Image/Classification/MNIST/ConvNet_MNIST
          examples/Image/Classification/MNIST/SimpleMNIST)
targets=()
for b in "${binaries[@]}"; do targets+=("$(basename "$b")"); done
ninja -C "$BUILD" "${targets[@]}"
grep -q 'CTK_USE_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" || { echo "gpu_kit: $BUILD has no CUDA backend" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for b in "${binaries[@]}"; do cp "$BUILD/$b" "$stage/"; done
strip --strip-unneeded "$stage"/*
# Every library the binaries load, except glibc's, the C++ runtime (the image's are newer) and CUDA's
# (the machine's driver and toolkit, or PyTorch's wheels, provide cuDNN; cudart and cuBLAS are static).
for b in "$stage"/*; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libz)\.so|/usr/local/cuda' |
    while read -r lib; do cp -L "$lib" "$stage/"; done
mkdir -p gpukit
git rev-parse HEAD >"$stage/GIT_SHA"
tar -C "$stage" -cf - . | xz -9e -T1 >gpukit/kit.tar.xz
if [ -d /usr/share/datasets/fashion-mnist ]; then
    mkdir -p gpukit/fashion-mnist && cp /usr/share/datasets/fashion-mnist/*-ubyte.gz gpukit/fashion-mnist/
fi
echo "gpu_kit: gpukit/kit.tar.xz, $(du -h gpukit/kit.tar.xz | cut -f1), $(ls "$stage" | wc -l) files, HEAD $(cut -c1-8 "$stage/GIT_SHA")"
