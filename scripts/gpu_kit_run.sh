#!/usr/bin/env bash
# Runs on a GPU machine (the device tool, with `carry: ["gpukit"]`): unpacks gpukit/kit.tar.xz (made by
# scripts/gpu_kit.sh), then `ctk info`, every GPU test binary, the MNIST examples on the GPU against the
# CPU, the MPI/NCCL test, and/or the GPU benchmarks against the machine's PyTorch.
# Usage: bash scripts/gpu_kit_run.sh [tests|distributed|examples|bench|all]... [-- extra compare.py args...]
#   (the phases run in the order given; all = tests, distributed, examples, bench; profile is asked for
#   by name)
#   CTK_KIT_SECONDS   the whole run's budget (default 540): every step gets at most what is left, so the
#                     logs of what finished come back even when the device tool's limit is near
#   CTK_KIT_TESTS     which test binaries (default: all seven); CTK_KIT_FILTER a --gtest_filter for them
#   CTK_KIT_EXAMPLES  which examples (default: ConvNet_MNIST SimpleMNIST)
#   CTK_KIT_BENCH     which bench runs: a space-separated list of f32, bf16, gemm, graph (default: all)
#   CTK_KIT_PROFILE   the profile phase's cases, as case:dtype (default: the three ResNet training cases)
# Logs go to $OUT (the device tool's folder): summary.txt, tests.log, examples.log, bench.log, profile.log,
# info.txt.
set -uo pipefail
phases=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do phases+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#phases[@]} -eq 0 ] && phases=(all)
expanded=()
for p in "${phases[@]}"; do
    if [ "$p" = all ]; then expanded+=(tests distributed examples bench); else expanded+=("$p"); fi
done
phases=("${expanded[@]}")
# compare.py's rounds unless the extra arguments name them: 3 keeps the six bench runs inside the budget.
case " $* " in *" --rounds "*) ;; *) set -- --rounds 3 "$@" ;; esac
OUT=${OUT:-/tmp/ctk-gpukit-out}
mkdir -p "$OUT"
deadline=$((SECONDS + ${CTK_KIT_SECONDS:-540}))
# capped SECONDS CMD...: runs CMD under `timeout`, for at most SECONDS and at most what the budget leaves.
capped() {
    local cap=$1 left=$((deadline - SECONDS - 3))
    shift
    [ "$left" -lt "$cap" ] && cap=$left
    if [ "$cap" -le 0 ]; then echo "(skipped: out of time)" >&2; return 125; fi
    timeout -k 5 "$cap" "$@"
}
KIT=/tmp/ctk-kit
rm -rf "$KIT" && mkdir -p "$KIT" && tar -xJf gpukit/kit.tar.xz -C "$KIT" || { echo "no gpukit/kit.tar.xz"; exit 1; }
# cuDNN (and NCCL): the toolkit's, else the folders of PyTorch's nvidia wheels that hold shared libraries.
libs=$KIT
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && libs="$libs:$d"; done
for p in $(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null); do
    for d in $(find "$p" -maxdepth 4 -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u); do libs="$libs:$d"; done
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
summary=$OUT/summary.txt
{
    echo "kit built from $(cat "$KIT/GIT_SHA"); phases: ${phases[*]}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "no nvidia-smi"
    missing=$(for b in "$KIT"/*_test "$KIT/ctk_bench" "$KIT/ctk"; do ldd "$b"; done | grep 'not found' | sort -u)
    [ -n "$missing" ] && echo "MISSING LIBRARIES: $missing"
} 2>&1 | tee "$summary"
capped 30 "$KIT/ctk" info >"$OUT/info.txt" 2>&1
echo "ctk info: exit $?" | tee -a "$summary"

tests() {
    for t in ${CTK_KIT_TESTS-cuda_test op_harness_gpu_test graph_harness_gpu_test learner_gpu_test train_gpu_test \
        mixed_precision_gpu_test cuda_graph_gpu_test}; do
        start=$SECONDS
        capped 240 "$KIT/$t" --gtest_brief=1 ${CTK_KIT_FILTER:+--gtest_filter=$CTK_KIT_FILTER} \
            >/tmp/ctk-gpukit-test.log 2>&1
        rc=$?
        counts=$(grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\] [0-9]+ test' /tmp/ctk-gpukit-test.log | tr -s ' ' | tr '\n' ' ')
        failed=$(grep -E '^\[  FAILED  \] [A-Za-z]' /tmp/ctk-gpukit-test.log | grep -v ' listed below' |
                 sed 's/^\[  FAILED  \] //; s/, where .*//' | sort -u | head -40 | tr '\n' ' ')
        case $rc in 124 | 137) why=' (timed out)' ;; 125) why=' (skipped: out of time)' ;; *) why='' ;; esac
        echo "$t: exit $rc$why, $((SECONDS - start)) s, $counts${failed:+FAILED: $failed}" |
            tee -a "$summary"
        { echo "== $t (exit $rc)"; cat /tmp/ctk-gpukit-test.log; } >>"$OUT/tests.log"
    done
}

bench() {
    run_bench() {
        echo "== ${CTK_CUDA_GRAPH:+CTK_CUDA_GRAPH=$CTK_CUDA_GRAPH }compare.py $*" >>"$OUT/bench.log"
        PYTHONUNBUFFERED=1 capped 200 python3 bench/compare.py --ctk-bench "$KIT/ctk_bench" --device cuda \
            --threads 1 "$@" >>"$OUT/bench.log" 2>&1
        echo "${CTK_CUDA_GRAPH:+CTK_CUDA_GRAPH=$CTK_CUDA_GRAPH }compare.py $*: exit $?" | tee -a "$summary"
    }
    runs=" ${CTK_KIT_BENCH:-gemm f32 bf16 graph} "
    [[ $runs == *" gemm "* ]] && run_bench --cases 'gemm_*' --dtype f32 "$@"
    [[ $runs == *" gemm "* ]] && run_bench --cases 'gemm_*' --dtype bf16 "$@"
    [[ $runs == *" f32 "* ]] && run_bench --cases 'train_resnet20' --dtype f32 "$@"
    [[ $runs == *" bf16 "* ]] && run_bench --cases 'train_resnet20,train_resnet50' --dtype bf16 "$@"
    # The training steps again, replayed from a CUDA Graph (forward, backward and updates).
    [[ $runs == *" graph "* ]] && CTK_CUDA_GRAPH=1 run_bench --cases 'train_resnet20' --dtype f32 "$@"
    [[ $runs == *" graph "* ]] && CTK_CUDA_GRAPH=1 run_bench --cases 'train_resnet20,train_resnet50' --dtype bf16 "$@"
    grep -E '^(case|gemm|train|add|conv|WARNING|compare.py: [a-z])' "$OUT/bench.log" | tee -a "$summary"
}

profile() {
    # Where a training step's time goes: ctk's op profile (CTK_PROFILE_OPS=1) and torch's, per case.
    for spec in ${CTK_KIT_PROFILE:-train_resnet20:f32 train_resnet20:bf16 train_resnet50:bf16}; do
        local name=${spec%%:*} dtype=f32
        [[ $spec == *:* ]] && dtype=${spec##*:}
        { echo "== ctk $name $dtype"
          CTK_PROFILE_OPS=1 capped 60 "$KIT/ctk_bench" --case "$name" --device cuda --dtype "$dtype" --min-time 1 \
              --warmup 0.5 2>&1
          echo "== torch $name $dtype"
          PYTHONUNBUFFERED=1 capped 60 python3 bench/torch_profile.py --ctk-bench "$KIT/ctk_bench" --case "$name" \
              --device cuda --dtype "$dtype" 2>&1
        } >>"$OUT/profile.log"
        echo "profile $name $dtype: done" | tee -a "$summary"
    done
}

examples() {
    # One epoch of each example on the CPU (the reference error), then on the GPU: f32, bf16, replayed
    # from a CUDA Graph. The last lines of each log carry the test error.
    data=/tmp/ctk-fashion-mnist
    if [ -d gpukit/fashion-mnist ] && "$KIT/ctk" data mnist gpukit/fashion-mnist "$data" >/dev/null 2>&1; then
        run_example() {  # name, then VAR=value settings
            local name=$1
            shift
            start=$SECONDS
            capped 90 env "$@" "$KIT/$name" --data "$data" --epochs 1 >/tmp/ctk-gpukit-example.log 2>&1
            rc=$?
            { echo "== $* $name --epochs 1 (exit $rc)"; cat /tmp/ctk-gpukit-example.log; } >>"$OUT/examples.log"
            echo "$* $name: exit $rc, $((SECONDS - start)) s, $(grep -E 'Final Results|^Error:' /tmp/ctk-gpukit-example.log | tr '\n' ' ')$([ $rc -ne 0 ] && tail -1 /tmp/ctk-gpukit-example.log)" |
                tee -a "$summary"
        }
        for name in ${CTK_KIT_EXAMPLES-ConvNet_MNIST SimpleMNIST}; do
            run_example $name CTK_DEFAULT_DEVICE=cpu
            run_example $name CTK_DEFAULT_DEVICE=gpu
            run_example $name CTK_DEFAULT_DEVICE=gpu CTK_MIXED_PRECISION=bf16
            run_example $name CTK_DEFAULT_DEVICE=gpu CTK_CUDA_GRAPH=1
        done
    else
        echo "examples: no gpukit/fashion-mnist (install dataset-fashion-mnist before scripts/gpu_kit.sh)" |
            tee -a "$summary"
    fi
}
distributed() {
    # NCCL, bootstrapped through MPI: one worker per GPU sums GPU tensors where they are (the ctest
    # distributed_mpi_gpu), then the whole MPI test with two workers. The kit's OpenMPI is found through
    # OPAL_PREFIX.
    [ -x "$KIT/ompi/bin/mpiexec" ] || { echo "distributed: the kit has no OpenMPI" | tee -a "$summary"; return; }
    local gpus
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || gpus=0
    run_mpi() {  # workers, then test arguments
        local n=$1
        shift
        start=$SECONDS
        OPAL_PREFIX=$KIT/ompi OMPI_MCA_mca_base_component_show_load_errors=0 PMIX_MCA_pcompress_base_silence_warning=1 \
            OMPI_MCA_btl_vader_single_copy_mechanism=none PATH=$KIT/ompi/bin:$PATH \
            capped 180 "$KIT/ompi/bin/mpiexec" --allow-run-as-root --oversubscribe -n "$n" \
            "$KIT/distributed_mpi_test" --gtest_brief=1 "$@" >/tmp/ctk-gpukit-mpi.log 2>&1
        rc=$?
        { echo "== mpiexec -n $n distributed_mpi_test $* (exit $rc)"; cat /tmp/ctk-gpukit-mpi.log; } >>"$OUT/tests.log"
        echo "mpiexec -n $n distributed_mpi_test $*: exit $rc, $((SECONDS - start)) s, $(grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\] [0-9]+ test' /tmp/ctk-gpukit-mpi.log | sort -u | tr -s ' ' | tr '\n' ' ')" |
            tee -a "$summary"
    }
    run_mpi 1 --gtest_filter='Mpi.GpuTensors*'
    [ "$gpus" -gt 1 ] && run_mpi "$gpus" --gtest_filter='Mpi.GpuTensors*'
    run_mpi 2
}
for phase in "${phases[@]}"; do
    case $phase in
        tests | examples | bench | profile | distributed) "$phase" "$@" ;;
        *) echo "gpu_kit_run: unknown phase '$phase' (tests, examples, bench, profile, distributed, all)" |
               tee -a "$summary" ;;
    esac
done
echo "done after $SECONDS s" | tee -a "$summary"
