#!/usr/bin/env bash
# Runs the C++ twin, then the C# API test against its numbers, on Debian's Fashion-MNIST (the IDX files
# of dataset-fashion-mnist); with PYTHON_DIR (the built `cntk` package), the Python twin too, whose
# numbers must equal the C++ twin's bit for bit.
# Usage: run_api_test.sh MONO API_TEST_EXE TWIN SCRATCH [PYTHON_DIR] [SAMPLES]
set -euo pipefail
mono=$1 exe=$2 twin=$3 scratch=$4 python_dir=${5:-} samples=${6:-60000}
data=${CTK_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
if [[ ! -e $data/train-images-idx3-ubyte.gz && ! -e $data/train-images-idx3-ubyte ]]; then
    echo "run_api_test.sh: Fashion-MNIST not found in $data (apt-get install dataset-fashion-mnist)" >&2
    exit 1
fi
mkdir -p "$scratch"
"$twin" "$data" "$scratch/twin.txt" "$samples"
if [[ -n $python_dir ]]; then
    PYTHONPATH=$python_dir /usr/bin/python3 "$(dirname "$0")/mlp_twin.py" "$data" "$scratch/twin_python.txt" "$samples"
    # repr of Python floats and C++'s 17 digits print the same doubles differently: compare the numbers
    /usr/bin/python3 - "$scratch/twin.txt" "$scratch/twin_python.txt" <<'PY'
import sys
def numbers(path):
    return [float(v) for line in open(path) for v in line.split()[1 if line.startswith('loss') else 2:]]
a, b = numbers(sys.argv[1]), numbers(sys.argv[2])
bad = sum(x != y for x, y in zip(a, b))
if len(a) != len(b) or bad:
    sys.exit('the Python twin differs from the C++ twin: %d of %d numbers (%d vs %d)' % (bad, len(a), len(a), len(b)))
print('the Python twin equals the C++ twin: %d numbers' % len(a))
PY
fi
exec "$mono" --debug "$exe" "$data" "$scratch" "$scratch/twin.txt" "$samples"
