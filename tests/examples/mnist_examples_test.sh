#!/usr/bin/env bash
# Smoke test of the MNIST examples: a tiny CTF data set in CNTK's MNIST layout (written here), one short
# epoch of each example, and CNTK's log lines in their output.
# Usage: mnist_examples_test.sh <ConvNet_MNIST> <SimpleMNIST>
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$(dirname "$0")/write_tiny_mnist.sh" "$dir"
"$1" --data "$dir" --epochs 2 --epoch-size 256 >"$dir/convnet.log" 2>&1
grep -q "^Training 98778 parameters in 10 parameter tensors.$" "$dir/convnet.log"
grep -q "^Learning rate per 1 samples: 0.001$" "$dir/convnet.log"
grep -Eq "^Finished Epoch\[2 of 2\]: \[Training\] loss = [0-9.]+ \* 256, metric = [0-9.]+% \* 256 [0-9.]+s \( *[0-9.]+ samples/s\);$" "$dir/convnet.log"
grep -Eq "^Final Results: Minibatch\[1-[0-9]+\]: errs = [0-9.]+% \* 320$" "$dir/convnet.log"
"$2" --data "$dir" --epochs 2 --epoch-size 256 >"$dir/simple.log" 2>&1
grep -Eq "^Finished Epoch\[2 of 2\]: \[Training\] loss = [0-9.]+ \* 256, metric = [0-9.]+% \* 256 " "$dir/simple.log"
grep -Eq "^Error: [0-9.]+$" "$dir/simple.log"
echo "MNIST examples ran"
