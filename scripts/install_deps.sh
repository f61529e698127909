#!/usr/bin/env bash
# Installs ctk's build and test dependencies from Debian's apt (idempotent, quiet).
# Usage: scripts/install_deps.sh [--bench]   (--bench adds PyTorch for bench/ and golden tests)
set -euo pipefail
packages=(cmake ninja-build g++ ccache pkg-config git
          libopenblas-openmp-dev libdnnl-dev libsleef-dev ocl-icd-opencl-dev
          libgtest-dev libgmock-dev libbenchmark-dev
          zlib1g-dev dataset-fashion-mnist
          libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
          libopenmpi-dev openmpi-bin
          libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev libzip-dev libboost-dev
          python3 python3-numpy python3-dev pybind11-dev python3-pytest python3-venv python3-pip
          mono-mcs mono-runtime nuget)
if [[ "${1:-}" == "--bench" ]]; then
    packages+=(python3-torch libopenblas0-openmp)
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
    sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
