#!/usr/bin/env python3
"""The PyTorch side's op profile: where torch's step of a bench case spends its GPU (or CPU) time, to set
beside ctk_bench's (CTK_PROFILE_OPS=1 ctk_bench --case ...). Builds the same workload compare.py times,
warms it up, then records `--steps` iterations with torch.profiler and prints the ops and kernels with the
most device time per step.

    python3 bench/torch_profile.py --case train_resnet50 --device cuda --dtype bf16
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the workloads, and torch itself)

torch = compare.torch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ctk-bench", default="build/bench/ctk_bench", help="for the case list")
    parser.add_argument("--case", required=True)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rows", type=int, default=30)
    args = parser.parse_args()
    cases = [c for c in compare.list_cases(args.ctk_bench) if c["case"] == args.case]
    if not cases:
        compare.fail("torch_profile.py: no case '%s'" % args.case)
    if args.device == "cuda":  # as compare.py: f32 exactly, no TF32
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    iteration, _ = compare.torch_workload(cases[0], args.device, args.dtype)
    for _ in range(5):
        iteration()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(args.steps):
            iteration()
    key = "self_cuda_time_total" if args.device == "cuda" else "self_cpu_time_total"
    print("torch %s, %s %s %s: %d steps profiled (times are totals over them)"
          % (torch.__version__, args.case, args.device, args.dtype, args.steps))
    print(prof.key_averages().table(sort_by=key, row_limit=args.rows, max_name_column_width=60))
    return 0


if __name__ == "__main__":
    sys.exit(main())
