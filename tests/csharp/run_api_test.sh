#!/usr/bin/env bash
# Runs the C++ twin, then the C# API test against its numbers, on Debian's Fashion-MNIST (the IDX files
# of dataset-fashion-mnist). Usage: run_api_test.sh MONO API_TEST_EXE TWIN SCRATCH [SAMPLES]
set -euo pipefail
mono=$1 exe=$2 twin=$3 scratch=$4 samples=${5:-60000}
data=${CTK_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
if [[ ! -e $data/train-images-idx3-ubyte.gz && ! -e $data/train-images-idx3-ubyte ]]; then
    echo "run_api_test.sh: Fashion-MNIST not found in $data (apt-get install dataset-fashion-mnist)" >&2
    exit 1
fi
mkdir -p "$scratch"
"$twin" "$data" "$scratch/twin.txt" "$samples"
exec "$mono" --debug "$exe" "$data" "$scratch" "$scratch/twin.txt" "$samples"
