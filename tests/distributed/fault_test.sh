#!/usr/bin/env bash
# A failing worker ends the whole job: mpiexec returns non-zero within 60 s and names the worker, and no
# worker prints that it finished. Usage: fault_test.sh MPIEXEC FAULT_PROGRAM
set -uo pipefail
mpiexec=$1 program=$2
run() {  # mode, then the pattern the output must contain
    local start end rc out
    start=$(date +%s)
    out=$(timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -n 2 "$program" "$1" 2>&1)
    rc=$?
    end=$(date +%s)
    echo "== $1: exit $rc after $((end - start)) s"
    echo "$out" | tail -n 15
    if [[ $rc -eq 0 || $rc -eq 124 ]]; then echo "FAIL: $1: the job did not fail (exit $rc)"; exit 1; fi
    if (( end - start > 60 )); then echo "FAIL: $1: the job took $((end - start)) s to end"; exit 1; fi
    if ! grep -q -E "$2" <<<"$out"; then echo "FAIL: $1: the output does not name the worker ($2)"; exit 1; fi
    if grep -q "finished" <<<"$out"; then echo "FAIL: $1: a worker reported success"; exit 1; fi
}
run kill "rank 1"
run raise "rank 0|worker 0 fails"
run exit "worker 0 of 2 stops the job: it is leaving with exit status 2"
out=$(timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -n 2 "$program" ok 2>&1) || { echo "$out"; echo "FAIL: ok run"; exit 1; }
[[ $(grep -c finished <<<"$out") -eq 2 ]] || { echo "$out"; echo "FAIL: both workers should finish"; exit 1; }
echo "fault tests passed"
