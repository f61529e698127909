#!/usr/bin/env bash
# Runs on a GPU machine (the device tool, with `carry: ["gpukit"]`): unpacks gpukit/kit.tar.xz (made by
# scripts/gpu_kit.sh), then `ctk info`, every GPU test binary, the MNIST examples on the GPU against the
# CPU, and/or the GPU benchmarks against the machine's PyTorch.
# Usage: bash scripts/gpu_kit_run.sh [tests|examples|bench|all] [extra compare.py args...]
# Logs go to $OUT (the device tool's folder): summary.txt, tests.log, examples.log, bench.log, info.txt.
set -uo pipefail
what=${1:-all}
shift || true
OUT=${OUT:-/tmp/ctk-gpukit-out}
mkdir -p "$OUT"
KIT=/tmp/ctk-kit
rm -rf "$KIT" && mkdir -p "$KIT" && tar -xJf gpukit/kit.tar.xz -C "$KIT" || { echo "no gpukit/kit.tar.xz"; exit 1; }
# cuDNN (and NCCL): the toolkit's, else those PyTorch's wheels bring.
libs=$KIT
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && libs="$libs:$d"; done
for d in $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, q, "lib") for p in nvidia.__path__ for q in sorted(os.listdir(p))))' 2>/dev/null); do
    [ -d "$d" ] && libs="$libs:$d"
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
summary=$OUT/summary.txt
{
    echo "kit built from $(cat "$KIT/GIT_SHA")"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "no nvidia-smi"
    missing=$(for b in "$KIT"/*_test "$KIT/ctk_bench" "$KIT/ctk"; do ldd "$b"; done | grep 'not found' | sort -u)
    [ -n "$missing" ] && echo "MISSING LIBRARIES: $missing"
} 2>&1 | tee "$summary"
"$KIT/ctk" info >"$OUT/info.txt" 2>&1
echo "ctk info: exit $?" | tee -a "$summary"

if [ "$what" = tests ] || [ "$what" = all ]; then
    for t in cuda_test op_harness_gpu_test graph_harness_gpu_test learner_gpu_test train_gpu_test \
        mixed_precision_gpu_test cuda_graph_gpu_test; do
        start=$SECONDS
        "$KIT/$t" --gtest_brief=1 >/tmp/ctk-gpukit-test.log 2>&1
        rc=$?
        counts=$(grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\] [0-9]+ test' /tmp/ctk-gpukit-test.log | tr -s ' ' | tr '\n' ' ')
        echo "$t: exit $rc, $((SECONDS - start)) s, $counts" | tee -a "$summary"
        { echo "== $t (exit $rc)"; cat /tmp/ctk-gpukit-test.log; } >>"$OUT/tests.log"
    done
fi

if [ "$what" = examples ] || [ "$what" = all ]; then
    # One epoch of each example on the CPU (the reference error), then on the GPU: f32, bf16, replayed
    # from a CUDA Graph. The last lines of each log carry the test error.
    data=/tmp/ctk-fashion-mnist
    if [ -d gpukit/fashion-mnist ] && "$KIT/ctk" data mnist gpukit/fashion-mnist "$data" >/dev/null 2>&1; then
        run_example() {  # name, then VAR=value settings
            local name=$1
            shift
            start=$SECONDS
            env "$@" "$KIT/$name" --data "$data" --epochs 1 >/tmp/ctk-gpukit-example.log 2>&1
            rc=$?
            { echo "== $* $name --epochs 1 (exit $rc)"; cat /tmp/ctk-gpukit-example.log; } >>"$OUT/examples.log"
            echo "$* $name: exit $rc, $((SECONDS - start)) s, $(grep -E 'Final Results|^Error:' /tmp/ctk-gpukit-example.log | tr '\n' ' ')" |
                tee -a "$summary"
        }
        for name in ConvNet_MNIST SimpleMNIST; do
            run_example $name CTK_DEFAULT_DEVICE=cpu
            run_example $name CTK_DEFAULT_DEVICE=gpu
            run_example $name CTK_DEFAULT_DEVICE=gpu CTK_MIXED_PRECISION=bf16
            run_example $name CTK_DEFAULT_DEVICE=gpu CTK_CUDA_GRAPH=1
        done
    else
        echo "examples: no gpukit/fashion-mnist (install dataset-fashion-mnist before scripts/gpu_kit.sh)" |
            tee -a "$summary"
    fi
fi

if [ "$what" = bench ] || [ "$what" = all ]; then
    run_bench() {
        echo "== ${CTK_CUDA_GRAPH:+CTK_CUDA_GRAPH=$CTK_CUDA_GRAPH }compare.py $*" >>"$OUT/bench.log"
        python3 bench/compare.py --ctk-bench "$KIT/ctk_bench" --device cuda "$@" >>"$OUT/bench.log" 2>&1
        echo "${CTK_CUDA_GRAPH:+CTK_CUDA_GRAPH=$CTK_CUDA_GRAPH }compare.py $*: exit $?" | tee -a "$summary"
    }
    run_bench --cases 'gemm_*' --dtype f32 --rounds 3 "$@"
    run_bench --cases 'gemm_*' --dtype bf16 --rounds 3 "$@"
    run_bench --cases 'train_resnet20' --dtype f32 --rounds 3 "$@"
    run_bench --cases 'train_resnet20,train_resnet50' --dtype bf16 --rounds 3 "$@"
    # The training steps again, replayed from a CUDA Graph (forward, backward and updates).
    CTK_CUDA_GRAPH=1 run_bench --cases 'train_resnet20' --dtype f32 --rounds 3 "$@"
    CTK_CUDA_GRAPH=1 run_bench --cases 'train_resnet20,train_resnet50' --dtype bf16 --rounds 3 "$@"
    grep -E '^(case|gemm|train|add|conv)' "$OUT/bench.log" | tee -a "$summary"
fi
