#!/usr/bin/env bash
# Smoke test of the C# example (examples/CSharp/MNISTClassifier.cs): a tiny CTF data set in CNTK's MNIST
# layout (written here), a short run of the MLP and of the ConvNet, CNTK's log lines and the test score.
# Usage: csharp_examples_test.sh MONO CSHARP_DIR
set -euo pipefail
mono=$1 csharp=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$(dirname "$0")/write_tiny_mnist.sh" "$dir"
for kind in mlp conv; do
    flag=""; [[ $kind == conv ]] && flag="--conv"
    # shellcheck disable=SC2086
    env LD_LIBRARY_PATH="$csharp" "$mono" "$csharp/MNISTClassifier.exe" --data "$dir" $flag --epochs 2 --epoch-size 320 \
        --model "$dir/$kind.model" > "$dir/$kind.log" 2>&1 || { cat "$dir/$kind.log"; exit 1; }
    grep -Eq "^Finished Epoch\[2\]: loss = [0-9.]+ \* 320, metric = [0-9.]+% \* 320 " "$dir/$kind.log"
    grep -Eq "^Saved .*$kind.model; test error: [0-9.]+% of 320 images$" "$dir/$kind.log"
done
echo "C# examples ran"
