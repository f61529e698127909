#!/usr/bin/env python3
"""What evaluating a model costs from C# (CNTK's C# API in bindings/csharp, run by mono) against C++
(ctk's C++ API): the same MLP 784-200-10 loaded from one file, the same batch made from host data every
call, the same threads and machine. Rounds alternate C++ and C#; the ratio is of medians.

Usage: /usr/bin/python3 bench/csharp_overhead.py --build build [--batches 1,64] [--threads 1] [--rounds 5]
Target (issue 25): C# costs less than 5% more per call than C++ (ratio < 1.05).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def run(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])["us_per_call"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--batches", default="1,64")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-time", type=float, default=1.0)
    a = p.parse_args()
    cpp = os.path.join(a.build, "bench", "ctk_eval_overhead")
    cs = os.path.join(a.build, "csharp", "eval_overhead.exe")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(a.build, "csharp"))
    env.pop("OPENBLAS_CORETYPE", None)
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "mlp.model")
        subprocess.run([cpp, "--make-model", model], check=True)
        print(f"{'batch':>5} {'C++ us/call':>12} {'C# us/call':>11} {'C# borrowed':>12} {'C#/C++':>7} {'borrowed/C++':>13}")
        for batch in [int(b) for b in a.batches.split(",")]:
            common = ["--model", model, "--batch", str(batch), "--min-time", str(a.min_time), "--threads", str(a.threads)]
            t_cpp, t_cs, t_borrow = [], [], []
            for _ in range(a.rounds):
                t_cpp.append(run([cpp] + common, env))
                t_cs.append(run(["mono", cs] + common, env))
                t_borrow.append(run(["mono", cs] + common + ["--borrow", "1"], env))
            m_cpp, m_cs, m_b = (statistics.median(t) for t in (t_cpp, t_cs, t_borrow))
            print(f"{batch:>5} {m_cpp:>12.2f} {m_cs:>11.2f} {m_b:>12.2f} {m_cs / m_cpp:>7.3f} {m_b / m_cpp:>13.3f}")


if __name__ == "__main__":
    main()
