#!/usr/bin/python3
"""The CPU GEMM sweep: ctk's f32 and bf16 matrix products against the best this machine does.

For each size (512 .. 4096, square C = A B) and thread count, runs ctk_bench's GEMM case in four ways,
interleaved for --rounds rounds, and PyTorch's torch.matmul in a fresh interpreter:
  ctk           ctk as a user runs it: no environment variable (the automatic route, ctk/kernels/cpu_info.h)
  ctk_fallback  the same with OPENBLAS_CORETYPE=Prescott: what an OpenBLAS that does not know the CPU does
                (Debian's 0.3.21 on Intel's Emerald Rapids picks its Prescott kernels by itself); ctk's
                route then takes oneDNN
  openblas      CTK_GEMM=openblas: OpenBLAS as it loads on this machine (its own CPU table)
  openblas_rc   CTK_GEMM=openblas with OPENBLAS_CORETYPE set to the core that fits the CPU (SkylakeX on
                AVX-512, Haswell on AVX2): OpenBLAS at its best
  onednn        CTK_GEMM=onednn: oneDNN's sgemm
  torch_rc      torch.matmul with the same OPENBLAS_CORETYPE (PyTorch given its best case by hand)
OPENBLAS_CORETYPE and CTK_GEMM of the caller's environment reach none of them. Prints one JSON line per
(dtype, size, threads) with the medians in GFLOP/s, ratio = ctk / max(openblas_rc, onednn) and
fallback_ratio = ctk_fallback / the same. bf16 products run on oneDNN's matmul in ctk (f32 accumulation)
and in torch; their ratio is to the best f32 figure, so > 1 means bf16 beats the machine's f32.
Only ratios from one run mean anything on these shared machines (docs/benchmarks.md).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


def right_core():
    """The OpenBLAS core whose kernels fit this CPU: the oldest of its level, so every instruction exists."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return "Sandybridge" if "avx" in flags else "Prescott"


def environment(gemm=None, coretype=None):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "CTK_GEMM")}
    if gemm:
        env["CTK_GEMM"] = gemm
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def run_ctk(args, n, threads, dtype, env):
    cmd = [args.ctk_bench, "--case", "gemm_%d" % n, "--threads", str(threads), "--dtype", dtype,
           "--min-time", str(args.min_time), "--warmup", str(args.warmup)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit("gemm_sweep.py: %s failed: %s" % (" ".join(cmd), proc.stderr.strip()[-300:]))
    return json.loads(lines[-1])["rate"]


TORCH = r"""
import sys, time, statistics, torch
n, threads, dtype = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
min_time, warmup = float(sys.argv[4]), float(sys.argv[5])
torch.set_num_threads(threads)
dt = torch.bfloat16 if dtype == "bf16" else torch.float32
g = torch.Generator().manual_seed(1)
a, b = torch.randn(n, n, generator=g).to(dt), torch.randn(n, n, generator=g).to(dt)
start = time.perf_counter()
while time.perf_counter() - start < warmup:
    torch.matmul(a, b)
samples, start = [], time.perf_counter()
while len(samples) < 3 or time.perf_counter() - start < min_time:
    t0 = time.perf_counter(); torch.matmul(a, b); samples.append(time.perf_counter() - t0)
print(2.0 * n ** 3 / statistics.median(samples) / 1e9)
"""


def run_torch(args, n, threads, dtype, coretype):
    proc = subprocess.run([sys.executable, "-c", TORCH, str(n), str(threads), dtype, str(args.min_time),
                           str(args.warmup)], capture_output=True, text=True, env=environment(None, coretype),
                          timeout=600)
    if proc.returncode != 0:
        sys.exit("gemm_sweep.py: torch failed: %s" % proc.stderr.strip()[-300:])
    return float(proc.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ctk-bench", default="build/bench/ctk_bench")
    parser.add_argument("--sizes", default="512,1024,2048,4096", help="sizes of ctk_bench's gemm_N cases")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--warmup", type=float, default=0.3)
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    args = parser.parse_args()
    core = right_core()
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "unknown")
    print("gemm_sweep.py: CPU %s; OpenBLAS's right core here: %s; load %s" % (
        model, core, " ".join("%.2f" % v for v in os.getloadavg())), file=sys.stderr)
    best_f32 = {}
    for dtype in args.dtypes.split(","):
        for n in [int(s) for s in args.sizes.split(",")]:
            for threads in [int(t) for t in args.threads.split(",")]:
                ways = {"ctk": environment()} if dtype == "bf16" else {
                    "ctk": environment(), "ctk_fallback": environment(None, "Prescott"),
                    "openblas": environment("openblas"), "openblas_rc": environment("openblas", core),
                    "onednn": environment("onednn")}
                rates = {k: [] for k in ways}
                if not args.no_torch:
                    rates["torch_rc"] = []
                for _ in range(args.rounds):
                    for way, env in ways.items():
                        rates[way].append(run_ctk(args, n, threads, dtype, env))
                    if not args.no_torch:
                        rates["torch_rc"].append(run_torch(args, n, threads, dtype, core))
                med = {k: round(statistics.median(v), 1) for k, v in rates.items()}
                if dtype == "f32":
                    best_f32[(n, threads)] = max(med["openblas_rc"], med["onednn"])
                best = best_f32.get((n, threads))
                line = {"dtype": dtype, "n": n, "threads": threads, "gflops": med,
                        "ratio": round(med["ctk"] / best, 3) if best else None}
                if "ctk_fallback" in med:
                    line["fallback_ratio"] = round(med["ctk_fallback"] / best, 3)
                print(json.dumps(line, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
