#!/usr/bin/env bash
# Builds the file readers' libFuzzer targets (clang, AddressSanitizer, CPU only, in build-fuzz) and runs
# each from its seeds (tests/fuzz/seeds/TARGET) with its dictionary (tests/fuzz/dict/TARGET.dict) for
# SECONDS, printing executions, coverage and findings. Inputs that crash are kept in build-fuzz/findings.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 60 s each, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
(( ${#targets[@]} )) || targets=(ctf idx_images idx_labels cifar cntk_dictionary cntk_v2 cntk_v1 onnx)
scripts/install_deps.sh
missing=()
for p in clang libclang-rt-dev libomp-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
    sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DCTK_FUZZ=ON -DCTK_USE_CUDA=OFF -DCTK_BUILD_PYTHON=OFF \
      -DCTK_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j "${CTK_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"
mkdir -p build-fuzz/findings
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0
for t in "${targets[@]}"; do
    corpus=build-fuzz/corpus/$t
    mkdir -p "$corpus"
    dict=()
    [[ -f tests/fuzz/dict/$t.dict ]] && dict=(-dict="tests/fuzz/dict/$t.dict")
    # -rss_limit_mb: an input that makes a reader hold more than 2 GiB is a finding (an allocation
    # without bound); -timeout: one that takes more than 10 s is a hang.
    log=build-fuzz/findings/$t.log
    set +e
    build-fuzz/tests/fuzz/fuzz_$t "$corpus" tests/fuzz/seeds/$t "${dict[@]}" -max_total_time="$seconds" \
        -rss_limit_mb=2048 -timeout=10 -artifact_prefix=build-fuzz/findings/"$t"- -print_final_stats=1 \
        >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
    echo "fuzz_$t: exit $rc, $execs executions, coverage $cov edges, corpus $(ls "$corpus" | wc -l) files"
    if (( rc != 0 )); then grep -m3 -E 'ERROR|SUMMARY|Test unit written' "$log" || true; fi
done
