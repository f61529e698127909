#!/usr/bin/env bash
# `ctk convert` and `ctk eval` on CNTK's policy-network model (a sequence model: lines are
# "<sample>.<step>"): the outputs match hand-computed values, survive CNTK v2 -> ONNX -> CNTK v2, and bad
# arguments or files fail with a message and a non-zero exit.
# Usage: cli_model_test.sh CTK_BINARY SHARED_TESTDATA_DIR
set -euo pipefail
ctk=$1
model=$2/models-v2/initial_policy_network.dnn
if [[ ! -f $model ]]; then
    echo "skipped: $model is not here"
    exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '|Input3 0 0\n|Input3 1 2\n|Input3 -1 0.5\n' > "$dir/in.ctf"

"$ctk" eval "$model" --ctf "$dir/in.ctf" > "$dir/direct.txt"
# x = (1, 2): h = relu(x W1) = (2.3790547, 2.9415197); y = h W2 + b2.
grep -q '^1\.0 .*: -5.2290978[0-9]* -1.9252107[0-9]* 1.699893[0-9]*$' "$dir/direct.txt" || {
    echo "unexpected outputs:"; cat "$dir/direct.txt"; exit 1; }
[[ $(wc -l < "$dir/direct.txt") -eq 3 ]]

"$ctk" convert "$model" "$dir/m.onnx" | grep -q '(CNTKv2) to .* (ONNX): 1 inputs, 4 parameter tensors (15 values)'
"$ctk" convert "$dir/m.onnx" "$dir/back.dnn" --to CNTKv2 | grep -q '(ONNX) to .* (CNTKv2)'
"$ctk" convert "$model" "$dir/v2.dnn" > /dev/null
"$ctk" eval "$dir/v2.dnn" --ctf "$dir/in.ctf" | cut -d' ' -f3- > "$dir/v2.txt"
cut -d' ' -f3- "$dir/direct.txt" | diff - "$dir/v2.txt"

# CNTK v1 models (cntk.exe) to CNTK v2 and to ONNX.
v1=$(dirname "$model")/../models-v1
if [[ -d $v1 ]]; then
    for f in 01_OneHidden ResNet20_CIFAR10_DataAug; do
        "$ctk" convert "$v1/$f.dnn" "$dir/$f.dnn" | grep -q '(CNTKv1) to .* (CNTKv2)'
        "$ctk" convert "$v1/$f.dnn" "$dir/$f.onnx" | grep -q '(CNTKv1) to .* (ONNX)'
        "$ctk" convert "$dir/$f.onnx" "$dir/$f.back.dnn" | grep -q '(ONNX) to .* (CNTKv2)'
    done
fi

# Errors: a message naming the problem and exit code 1 (bad input) or 2 (bad usage).
set +e
"$ctk" eval "$dir/missing.dnn" --ctf "$dir/in.ctf" 2> "$dir/err.txt"; rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "missing.dnn" "$dir/err.txt"
printf 'not a model' > "$dir/junk.dnn"
set +e
"$ctk" convert "$dir/junk.dnn" "$dir/out.dnn" 2> "$dir/err.txt"; rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "junk.dnn" "$dir/err.txt"
set +e
"$ctk" convert only-one-argument 2> /dev/null; rc=$?
set -e
[[ $rc -eq 2 ]]
echo "ok"
