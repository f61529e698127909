# Times PyTorch's conv2d (forward + autograd backward for input and weight, f32) on the ResNet-20 CIFAR
# shapes at batch 128, as dev/conv_timing.cpp times ctk. PyTorch 1.13 on this machine runs the same
# oneDNN 2.6.3 through ideep. With --ctk SHIM (built from dev/conv_timing_shim.cpp) it also runs ctk in
# this process, alternating the two rep by rep so that both see the same machine load.
# Usage: /usr/bin/python3 dev/conv_timing_torch.py THREADS [REPS] [--ctk /tmp/ctk_conv_shim.so]
import ctypes
import statistics
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = [  # name, batch, in channels, out channels, height = width, stride
    ("16->16 32x32 s1", 128, 16, 16, 32, 1),
    ("32->32 16x16 s1", 128, 32, 32, 16, 1),
    ("64->64 8x8 s1", 128, 64, 64, 8, 1),
    ("16->32 32x32 s2", 128, 16, 32, 32, 2),
    ("32->64 16x16 s2", 128, 32, 64, 16, 2),
]


def torch_step(n, c, o, hw, stride):
    x = torch.rand(n, c, hw, hw).mul_(2).sub_(1).requires_grad_()
    w = torch.rand(o, c, 3, 3).mul_(2).sub_(1).requires_grad_()
    dy = torch.rand_like(F.conv2d(x, w, None, stride, 1))

    def step():
        y = F.conv2d(x, w, None, stride, 1)
        torch.autograd.grad(y, (x, w), dy)

    return step


def ctk_step(lib, n, c, o, hw, stride):
    problem = lib.ctk_conv_make(n, c, o, hw, stride)
    return lambda: lib.ctk_conv_step(problem)


def timed(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def main():
    args = sys.argv[1:]
    shim = None
    if "--ctk" in args:
        i = args.index("--ctk")
        shim = args[i + 1]
        del args[i:i + 2]
    threads = int(args[0]) if args else 1
    reps = int(args[1]) if len(args) > 1 else 15
    torch.set_num_threads(threads)
    lib = None
    if shim:
        lib = ctypes.CDLL(shim)
        lib.ctk_conv_make.restype = ctypes.c_void_p
        lib.ctk_conv_make.argtypes = [ctypes.c_int64] * 5
        lib.ctk_conv_step.argtypes = [ctypes.c_void_p]
        lib.ctk_conv_set_threads(threads)
    print(f"torch {torch.__version__} conv2d fwd+bwd, f32, {threads} thread(s), min / median of {reps} runs (ms)")
    for name, *shape in SHAPES:
        steps = {"torch": torch_step(*shape)}
        if lib:
            steps["ctk"] = ctk_step(lib, *shape)
        times = {k: [] for k in steps}
        for _ in range(3):  # warm-up: primitive creation, caches
            for fn in steps.values():
                fn()
        for _ in range(reps):
            for k, fn in steps.items():
                times[k].append(timed(fn))
        line = f"  {name:18s}"
        for k, t in times.items():
            line += f" {k} {min(t):8.2f} / {statistics.median(t):8.2f}"
        if lib:
            ratio = min(times["torch"]) / min(times["ctk"])
            ratio_med = statistics.median(times["torch"]) / statistics.median(times["ctk"])
            line += f"   torch/ctk time: best {ratio:5.2f}, median {ratio_med:5.2f}"
        print(line)


if __name__ == "__main__":
    main()
