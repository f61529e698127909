#!/usr/bin/env bash
# The C examples: train_logistic trains and saves a model through ctk's C ABI, evaluate_cntk reads it
# through CNTK's evaluation C API; then the C component is installed (cmake --install) into a scratch
# prefix and evaluate_cntk.c is compiled against the installed headers and library with pkg-config, as
# a user outside the build tree would, and run again.
# Usage: c_examples_test.sh BUILD_DIR TRAIN_LOGISTIC EVALUATE_CNTK SCRATCH [CC_FLAGS]
# (CC_FLAGS: what the build compiled with that a program linking it needs, e.g. the sanitizers)
set -euo pipefail
build=$1 train=$2 evaluate=$3 scratch=$4 cc_flags=${5:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
"$train" "$scratch/model/logistic.model" | tee "$scratch/train.log"
grep -q "test error: [0-4]\.[0-9]*% of 500 points" "$scratch/train.log"
"$evaluate" "$scratch/model/logistic.model" 2 -2 | tee "$scratch/eval.log"
grep -q "^input features: 2 values" "$scratch/eval.log"
# class 1 sits at (2, -2): its score must be the larger one
awk '/^z:/ { exit !($3 > $2) }' "$scratch/eval.log"

cmake --install "$build" --prefix "$scratch/prefix" --component c > /dev/null
export PKG_CONFIG_PATH=$scratch/prefix/lib/pkgconfig
# shellcheck disable=SC2046
# shellcheck disable=SC2086
cc -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Werror $cc_flags -o "$scratch/evaluate_installed" "$root/examples/C/evaluate_cntk.c" \
   $(pkg-config --cflags --libs ctk_c)
"$scratch/evaluate_installed" "$scratch/model/logistic.model" 2 -2 > "$scratch/eval_installed.log"
cmp <(grep "^z:" "$scratch/eval.log") <(grep "^z:" "$scratch/eval_installed.log")
echo "c_examples_test: passed"
