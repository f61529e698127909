#!/usr/bin/python3
"""ctk versus PyTorch on the same workloads, same thread count, in one run.

For every (case, threads), runs ctk (bench/ctk_bench as a subprocess) and the identical PyTorch workload
in this process, interleaved A B A B ... for --rounds rounds, and prints one JSON line with the median
of each side and ratio = ctk rate / torch rate. These machines drift by +-15 %, so only ratios taken in
the same run, interleaved, mean anything. Run with Debian's /usr/bin/python3 (it has torch); see
docs/benchmarks.md. The case table comes from `ctk_bench --list`, so both sides build the same work,
and before timing a case its ctk outputs are checked against torch in float64 on the same inputs (for
the model cases: the forward pass on ctk's weights, and train_mlp's first step; train_convnet's step is
not checked, as its dropout masks differ). Model cases also report each side's peak resident memory.

OPENBLAS_CORETYPE in compare.py's environment reaches torch only: ctk_bench runs without it, as a user
runs ctk (ctk routes its products by itself: ctk/kernels/cpu_info.h). So `OPENBLAS_CORETYPE=SkylakeX
compare.py ...` measures PyTorch at its best against ctk as it comes; the header names each side's core.
"""

import argparse
import contextlib
import ctypes
import fnmatch
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from convnet_mnist_torch import ConvNet, glorot_init_  # the torch twin of ConvNet_MNIST.cpp (this folder)
from resnet_torch import resnet20, resnet50  # the torch twins of ctk_bench's ResNet cases


def fail(message):
    """Setup errors exit with 2, so that 1 stays the answer of --require-ratio."""
    print(message, file=sys.stderr)
    sys.exit(2)


# ---- the torch side --------------------------------------------------------------------------------

def mapped_blas_paths():
    """Paths of the BLAS/LAPACK libraries mapped into this process."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            name = os.path.basename(path).lower()
            if path.startswith("/") and ("blas" in name or "lapack" in name):
                paths.add(os.path.realpath(path))
    return sorted(paths)


def check_torch_blas(allow_other):
    """Torch's BLAS must be OpenBLAS: Debian's torch links libblas.so.3, which without libopenblas0-openmp
    is the netlib reference BLAS (sgemm ~30x slower) and would make every GEMM ratio meaningless. Every
    mapped BLAS must come from OpenBLAS (libblas.so.3 of the openblas-openmp alternative counts)."""
    a = torch.randn(256, 256)
    torch.matmul(a, a)  # maps the BLAS library if it is loaded lazily
    paths = mapped_blas_paths()
    if paths and all("openblas" in p for p in paths):
        names = ", ".join(os.path.basename(p) for p in paths if "libopenblas" in p) or paths[0]
        try:  # the kernels OpenBLAS picked for this CPU (its own table, or OPENBLAS_CORETYPE)
            lib = ctypes.CDLL(paths[0])
            lib.openblas_get_corename.restype = ctypes.c_char_p
            names += " core %s" % lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            pass
        return names
    message = ("compare.py: torch is not running on OpenBLAS (mapped: %s); install libopenblas0-openmp "
               "so that torch's GEMM is comparable" % (", ".join(paths) or "no BLAS"))
    if not allow_other:
        fail(message + " (or pass --allow-non-openblas to measure anyway)")
    print("WARNING: " + message, file=sys.stderr)
    return "NOT OpenBLAS: " + (", ".join(paths) or "none")


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def status_mb(key):
    """Resident memory of this process from /proc/self/status, MiB: VmRSS (now) or VmHWM (peak). Not
    ru_maxrss, which across fork + exec keeps the forking parent's peak."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def time_iterations(iteration, warmup_s, min_time_s):
    """The same discipline as ctk_bench: warm up for >= 2 iterations and warmup_s, then time single
    iterations until min_time_s has passed and >= 5 were taken. Returns the iteration count, the median
    seconds and the minor page faults per timed iteration (memory the allocator returned to the kernel
    and faulted back in: a cost of the allocator's state, not of the kernels)."""
    start = time.perf_counter()
    done = 0
    while done < 2 or time.perf_counter() - start < warmup_s:
        iteration()
        done += 1
    samples = []
    faults = minor_faults()
    start = time.perf_counter()
    while len(samples) < 5 or time.perf_counter() - start < min_time_s:
        t0 = time.perf_counter()
        iteration()
        samples.append(time.perf_counter() - t0)
    return {"iterations": len(samples), "median_s": statistics.median(samples),
            "faults_per_iter": (minor_faults() - faults) / len(samples)}


TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def torch_workload(case, device="cpu", dtype="f32"):
    """Inputs (built once, outside the timing) and one iteration of `case` in PyTorch, plus a label of the
    kernel family torch picks. The iteration does exactly what ctk_bench's does: GEMM allocates C; a conv
    step runs the bias-free forward, then dx and dw for a fixed dy (no bias gradient, no extra outputs).
    On a GPU the iteration waits for the device at its end, as ctk_bench's does."""
    gen = torch.Generator().manual_seed(1234)
    dt = TORCH_DTYPES[dtype]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def make(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(device=device, dtype=dt)

    if case["kind"] == "model":
        return model_workload(case, gen, device, dt, sync)

    if case["kind"] == "add":
        a, b = make(case["n"]), make(case["n"])

        def add():
            torch.add(a, b)
            sync()
        return add, "element-wise"

    if case["kind"] == "chain":
        x, b, ops = make(case["n"]), make(case["n"], scale=0.1), case["ops"]

        def chain():
            y = x
            for i in range(ops):
                y = torch.tanh(y) if i % 2 == 0 else torch.add(y, b)
            sync()
        return chain, "eager"

    if case["kind"] == "gemm":
        n = case["n"]
        a, b = make(n, n), make(n, n)
        assert torch.matmul(a, b).shape == (n, n)

        def gemm():
            torch.matmul(a, b)
            sync()
        return gemm, "cuBLAS" if device == "cuda" else "BLAS"

    n, c_in, c_out, hw, k = case["batch"], case["c_in"], case["c_out"], case["hw"], case["kernel"]
    stride, pad, out_hw = case["stride"], case["pad"], case["out_hw"]
    x = make(n, c_in, hw, hw).requires_grad_()
    w = make(c_out, c_in, k, k, scale=1 / (c_in * k * k) ** 0.5).requires_grad_()
    dy = make(n, c_out, out_hw, out_hw)

    def step():
        y = F.conv2d(x, w, None, stride=stride, padding=pad)
        grads = torch.autograd.grad(y, (x, w), dy)
        sync()
        return grads

    y = F.conv2d(x, w, None, stride=stride, padding=pad)
    assert y.shape == dy.shape, (tuple(y.shape), tuple(dy.shape))
    dx, dw = step()
    assert dx.shape == x.shape and dw.shape == w.shape
    backend = torch._C._select_conv_backend(x, w, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1)
    return step, str(backend).split(".")[-1]


def torch_model(case):
    """The torch twin of a model case's network, initialised as CNTK does (glorot_uniform, zero biases).
    The MLP's module names (0, 2, 4) and the ConvNet's (conv1 ... fc2) are the names ctk_bench dumps."""
    if case["model"] == "mlp":
        model = nn.Sequential(nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200), nn.ReLU(), nn.Linear(200, 10))
    elif case["model"] == "resnet20":
        return resnet20()
    elif case["model"] == "resnet50":
        return resnet50()
    else:
        model = ConvNet()
    return glorot_init_(model)


MODEL_INPUTS = {"mlp": ((784,), 1.0, 10), "convnet": ((1, 28, 28), 256.0, 10),
                "resnet20": ((3, 32, 32), 1.0, 10), "resnet50": ((3, 224, 224), 1.0, 1000)}


def model_workload(case, gen, device, dt, sync):
    """A model case as ctk_bench runs it: `batches` pre-generated random minibatches on the device, cycled;
    training is forward, CrossEntropyLoss(reduction='sum') (CNTK sums the loss over the minibatch),
    backward, an SGD step, and the loss and error count read back (ctk's Trainer computes both);
    inference is a forward pass under no_grad in eval mode (dropout off). bf16 is mixed precision on
    both sides: f32 weights, the forward under torch.autocast (ctk: Trainer with MixedPrecision::bf16)."""
    n = case["batch"]
    sample, high, classes = MODEL_INPUTS[case["model"]]
    batches = [((torch.rand(n, *sample, generator=gen) * high).to(device=device),
                torch.randint(0, classes, (n,), generator=gen).to(device))
               for _ in range(case["batches"])]
    model = torch_model(case).to(device=device)
    autocast = (torch.autocast(device_type=device, dtype=dt) if dt != torch.float32
                else contextlib.nullcontext())
    position = [0]

    def next_batch():
        position[0] += 1
        return batches[position[0] % len(batches)]

    if not case["train"]:
        model.eval()

        def infer():
            with torch.no_grad(), autocast:
                model(next_batch()[0])
            sync()
        return infer, "nn.Module eval"

    model.train()
    # ctk's momentum_sgd is unit-gain: s = m s + (1 - m) lr g, w -= s. SGD with dampening = m keeps
    # buf = m buf + (1 - m) g, w -= lr buf: the same while lr is constant (except torch's first step,
    # buf = g), and the same work per step. lr per sample on the summed loss = CNTK's per-sample rate.
    m = case["momentum"]
    optimizer = torch.optim.SGD(model.parameters(), lr=case["lr_per_sample"], momentum=m, dampening=m)

    def train_step():
        x, y = next_batch()
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            z = model(x)
            loss = F.cross_entropy(z, y, reduction="sum")
        loss.backward()
        optimizer.step()
        float(loss), int((z.argmax(1) != y).sum())  # the trainer's loss and classification error
        sync()
    return train_step, "nn.Module train"


def time_torch(case, threads, workload, args):
    if args.device == "cuda":
        return time_iterations(workload, args.warmup, args.min_time)
    torch.set_num_threads(threads)
    if torch.get_num_threads() != threads:
        fail("compare.py: torch.set_num_threads(%d) left %d threads" % (threads, torch.get_num_threads()))
    return time_iterations(workload, args.warmup, args.min_time)


def run_torch_worker(case, threads, args):
    """--torch-subprocess: one round of torch in a fresh interpreter, as ctk gets a fresh process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", json.dumps(case), "--threads",
           str(threads), "--device", args.device, "--dtype", args.dtype, "--min-time", str(args.min_time),
           "--warmup", str(args.warmup)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300 + 20 * args.min_time)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        fail("compare.py: torch worker failed (%d): %s" % (proc.returncode, proc.stderr.strip()[-500:]))
    return json.loads(lines[-1])


# ---- the ctk side ----------------------------------------------------------------------------------

CTK_OPENBLAS_CORE = None  # --ctk-openblas-core: the core ctk's OpenBLAS is told, to stand for another CPU


def ctk_environment():
    """The environment of every ctk_bench process: this one's without OPENBLAS_CORETYPE (see above), or
    with --ctk-openblas-core's."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if CTK_OPENBLAS_CORE:
        env["OPENBLAS_CORETYPE"] = CTK_OPENBLAS_CORE
    return env


def run_ctk(case, threads, args):
    """One ctk_bench process; its JSON line, or {"error": ...} when it failed."""
    cmd = [args.ctk_bench, "--case", case["case"], "--threads", str(threads), "--device", args.device,
           "--dtype", args.dtype, "--min-time", str(args.min_time), "--warmup", str(args.warmup)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120 + 20 * args.min_time,
                              env=ctk_environment())
    except subprocess.TimeoutExpired:
        return {"error": "ctk_bench timed out"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": "ctk_bench exited with %d and printed no JSON: %s"
                % (proc.returncode, (proc.stderr or proc.stdout).strip()[-300:])}
    result = json.loads(lines[-1])
    if proc.returncode != 0 and "error" not in result:
        result["error"] = "ctk_bench exited with %d" % proc.returncode
    return result


def check_case(case, args):
    """Runs one ctk step on ctk's own inputs (ctk_bench --dump), recomputes it in torch in float64 from
    the same inputs, and returns the worst error relative to each output's largest magnitude: proof that
    both sides compute the same thing, not just something of the same size."""
    with tempfile.TemporaryDirectory(prefix="ctk_bench_check_") as tmp:
        proc = subprocess.run([args.ctk_bench, "--case", case["case"], "--device", args.device, "--dtype",
                               args.dtype, "--dump", tmp], capture_output=True, text=True, timeout=300,
                              env=ctk_environment())
        if proc.returncode != 0:
            lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
            error = json.loads(lines[-1]).get("error") if lines else proc.stderr.strip()[-300:]
            return {"ok": False, "error": error}

        def load(name, shape):
            # The reference runs in float64 on the benchmark's device (an 8192^3 product is slow on a CPU).
            data = np.fromfile(os.path.join(tmp, name + ".f32"), dtype="<f4").reshape(shape)
            return torch.from_numpy(data).double().to(args.device)

        if case["kind"] == "model":
            return check_model(case, tmp, load, args.device)
        if case["kind"] == "add":
            n = case["n"]
            pairs = {"c": (load("c", (n,)), load("a", (n,)) + load("b", (n,)))}
        elif case["kind"] == "chain":
            n = case["n"]
            y, b = load("x", (n,)), load("b", (n,))
            for i in range(case["ops"]):
                y = torch.tanh(y) if i % 2 == 0 else y + b
            pairs = {"y": (load("y", (n,)), y)}
        elif case["kind"] == "gemm":
            n = case["n"]
            a, b = load("a", (n, n)), load("b", (n, n))
            pairs = {"c": (load("c", (n, n)), torch.matmul(a, b))}
        else:
            n, c_in, c_out, hw, k, out_hw = (case[key] for key in ("batch", "c_in", "c_out", "hw", "kernel",
                                                                    "out_hw"))
            x = load("x", (n, c_in, hw, hw)).requires_grad_()
            w = load("w", (c_out, c_in, k, k)).requires_grad_()
            dy = load("dy", (n, c_out, out_hw, out_hw))
            y = F.conv2d(x, w, None, stride=case["stride"], padding=case["pad"])
            dx, dw = torch.autograd.grad(y, (x, w), dy)
            pairs = {"y": (load("y", y.shape), y.detach()), "dx": (load("dx", dx.shape), dx),
                     "dw": (load("dw", dw.shape), dw)}
    worst = max(float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
                for got, want in pairs.values())
    # f32 sums of a few thousand products (dw: N*Ho*Wo of them) stay near 1e-5 of the largest value;
    # bf16 outputs carry 8-bit mantissas (~4e-3); a wrong pad, stride or transpose gives errors of order one.
    return {"ok": worst < (2e-2 if args.dtype == "bf16" else 1e-4), "max_rel_err": float("%.2g" % worst)}


def check_model(case, tmp, load, device):
    """A model case's check, on ctk's initial weights loaded into the torch twin in float64: z and the
    summed loss on minibatch 0 in inference mode (dropout off), i.e. that both sides build the same network.
    For train_mlp also the first training step: ctk's parameter change against -(1 - m) lr grad (the
    first unit-gain momentum step) and that step's summed loss. train_convnet's step is not checked: its
    dropout masks differ between the two sides."""
    with open(os.path.join(tmp, "params.txt")) as manifest:
        shapes = {line.split()[0]: tuple(int(d) for d in line.split()[1:]) for line in manifest if line.strip()}
    if case["model"].startswith("resnet"):
        # Same architecture: the same learnable tensors, by element count in build order (ctk's Dense W is
        # [in, out], torch's Linear [out, in]; a BN scale is [C] on both sides).
        ctk_sizes = [int(np.prod(shape)) for shape in shapes.values()]
        torch_sizes = [p.numel() for p in torch_model(case).parameters()]
        return {"ok": ctk_sizes == torch_sizes, "parameters": sum(ctk_sizes),
                "checked": "parameter tensors (%d, %d weights) match in order; values not compared"
                           % (len(ctk_sizes), sum(ctk_sizes))}
    model = torch_model(case).double().to(device)
    state = model.state_dict()
    if set(state) != set(shapes):
        return {"ok": False, "error": "ctk parameters %s, torch %s" % (sorted(shapes), sorted(state))}

    def to_torch(name, tensor):
        # ctk's Dense W is [input dims..., out] (x times W), torch's Linear weight [out, in]; a conv bias
        # is [O, 1, 1] in ctk, [O] in torch; conv weights are [O, C, kh, kw] on both sides.
        want = state[name].shape
        return tensor.reshape(-1, want[0]).t() if len(want) == 2 else tensor.reshape(want)

    before = {name: to_torch(name, load(name, shape)) for name, shape in shapes.items()}
    model.load_state_dict(before)
    n = case["batch"]
    x = load("x", (n, 784) if case["model"] == "mlp" else (n, 1, 28, 28))
    y = load("labels", (n, 10)).argmax(1)
    model.eval()
    with torch.no_grad():
        z = model(x)
        loss = F.cross_entropy(z, y, reduction="sum")
    pairs = {"z": (load("z", (n, 10)), z), "loss": (load("loss", (1,)), loss.reshape(1))}
    checked = "forward"
    if case["train"] and case["model"] == "mlp":
        model.train()
        train_loss = F.cross_entropy(model(x), y, reduction="sum")
        grads = torch.autograd.grad(train_loss, [p for _, p in model.named_parameters()])
        step = (1 - case["momentum"]) * case["lr_per_sample"]
        for (name, _), g in zip(model.named_parameters(), grads):
            after = to_torch(name, load("after." + name, shapes[name]))
            pairs["step " + name] = (after - before[name], -step * g)
        pairs["train_loss"] = (load("train_loss", (1,)), train_loss.detach().reshape(1))
        checked = "forward, first training step"
    elif case["train"]:
        checked = "forward (training step not checked: dropout masks differ)"
    errors = {name: float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
              for name, (got, want) in pairs.items()}
    worst = max(errors, key=errors.get)
    # A step is read back as the difference of two f32 weights of ~0.1 (ulp ~7e-9) for changes of ~1e-5,
    # so the step comparison allows 1e-3; z and the loss 1e-4 as the other cases.
    ok = all(err < (1e-3 if name.startswith("step") else 1e-4) for name, err in errors.items())
    return {"ok": ok, "max_rel_err": float("%.2g" % errors[worst]), "worst": worst, "checked": checked}


# ---- the comparison --------------------------------------------------------------------------------

def rate_of(case, median_s, dtype="f32"):
    if case["kind"] == "add":
        return 3 * case["n"] * (2 if dtype == "bf16" else 4) * 1e-9 / median_s  # GB/s moved
    if case["kind"] == "gemm":
        return case["gflop_per_iter"] / median_s
    if case["kind"] == "chain":
        return case["ops"] * 1e-6 / median_s  # million ops per second
    return case["batch"] / median_s


def side_summary(case, rounds, dtype="f32"):
    """Median over rounds of the per-round medians, with the derived rates."""
    median_s = statistics.median(r["median_s"] for r in rounds)
    return {"median_s": float("%.6g" % median_s), "rate": round(rate_of(case, median_s, dtype), 2),
            "gflops": round(case["gflop_per_iter"] / median_s, 2), "rounds": len(rounds),
            "faults_per_iter": round(statistics.median(r["faults_per_iter"] for r in rounds), 1)}


def measure(case, threads, args, check):
    workload, backend = (None, None) if args.torch_subprocess else torch_workload(case, args.device, args.dtype)
    ctk_rounds, torch_rounds, paired = [], [], []
    ctk_error = None
    for _ in range(args.rounds):
        ctk = None
        if ctk_error is None:
            ctk = run_ctk(case, threads, args)
            if "error" in ctk:
                ctk_error = ctk["error"]  # a failing case fails every round: stop asking
                ctk = None
            else:
                if not ctk_rounds and "openblas" not in ctk.get("blas", ""):
                    print("WARNING: ctk_bench mapped BLAS '%s', not OpenBLAS" % ctk.get("blas"), file=sys.stderr)
                ctk_rounds.append(ctk)
        if args.torch_subprocess:
            t = run_torch_worker(case, threads, args)
            backend = t["backend"]
        else:
            t = time_torch(case, threads, workload, args)
        torch_rounds.append(t)
        if ctk is not None:
            paired.append(t["median_s"] / ctk["median_s"])  # this round's ctk rate / torch rate

    line = {"case": case["case"], "threads": threads}
    if ctk_error is None:
        line["ctk"] = side_summary(case, ctk_rounds, args.dtype)
        line["ctk"]["blas"] = ctk_rounds[0].get("blas")
        if "cuda_graph_status" in ctk_rounds[-1]:  # CTK_CUDA_GRAPH=1: replayed steps, or why not
            line["ctk"]["cuda_graph_replays"] = ctk_rounds[-1]["cuda_graph_replays"]
            line["ctk"]["cuda_graph_status"] = ctk_rounds[-1]["cuda_graph_status"]
    else:
        line["ctk"] = {"error": ctk_error}
    line["torch"] = side_summary(case, torch_rounds, args.dtype)
    line["torch"]["backend"] = backend
    if ctk_error is None:
        # rates are inverse times, so ctk rate / torch rate = torch median / ctk median
        line["ratio"] = round(statistics.median(r["median_s"] for r in torch_rounds)
                              / statistics.median(r["median_s"] for r in ctk_rounds), 3)
        line["ratio_range"] = [round(min(paired), 3), round(max(paired), 3)]
    else:
        line["ratio"] = None
    # Peak resident memory of each side's whole process (see docs/benchmarks.md): ctk_bench's own
    # VmHWM per round; torch's from a fresh interpreter that runs one round of the same workload (in
    # this process the peak would carry every earlier case), one extra round for the model cases unless
    # --torch-subprocess gives every round its own. base: the process before it built the workload.
    if ctk_rounds and "peak_rss_mb" in ctk_rounds[0]:
        line["ctk_peak_rss_mb"] = round(statistics.median(r["peak_rss_mb"] for r in ctk_rounds), 1)
        line["ctk_base_rss_mb"] = round(statistics.median(r["base_rss_mb"] for r in ctk_rounds), 1)
    rss_rounds = torch_rounds if args.torch_subprocess else (
        [run_torch_worker(case, threads, args)] if case["kind"] == "model" else [])
    if rss_rounds:
        line["torch_peak_rss_mb"] = round(statistics.median(r["peak_rss_mb"] for r in rss_rounds), 1)
        line["torch_base_rss_mb"] = round(statistics.median(r["base_rss_mb"] for r in rss_rounds), 1)
    line["unit"] = case["unit"]
    if check is not None:
        line["check"] = check
    line["load_avg"] = round(os.getloadavg()[0], 2)
    return line


def list_cases(ctk_bench):
    try:
        proc = subprocess.run([ctk_bench, "--list"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        fail("compare.py: cannot run '%s --list' (%s); build it with `ninja -C build ctk_bench` or pass "
             "--ctk-bench PATH" % (ctk_bench, e))
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def select_cases(cases, patterns):
    if not patterns:
        return cases
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    for p in wanted:
        if not any(fnmatch.fnmatchcase(c["case"], p) for c in cases):
            fail("compare.py: no case matches '%s'; cases: %s" % (p, ", ".join(c["case"] for c in cases)))
    return [c for c in cases if any(fnmatch.fnmatchcase(c["case"], p) for p in wanted)]


def print_table(lines, header, out):
    print(header, file=out)
    row = "{:<26} {:>3} {:>10} {:>10} {:>7}  {:<11} {:<9} {:>11} {:>13} {:>5}"
    print(row.format("case", "thr", "ctk", "torch", "ratio", "round range", "unit", "faults c/t", "peak MiB c/t",
                     "load"), file=out)
    for line in lines:
        ctk, tch = line["ctk"], line["torch"]
        ctk_rate = "%.1f" % ctk["rate"] if "rate" in ctk else "error"
        ratio = "%.3f" % line["ratio"] if line["ratio"] is not None else "-"
        spread = "%.2f-%.2f" % tuple(line["ratio_range"]) if "ratio_range" in line else ""
        faults = "%d/%d" % (ctk.get("faults_per_iter", -1), tch["faults_per_iter"])
        rss = "%s/%s" % tuple("%.0f" % line[k] if k in line else "-" for k in ("ctk_peak_rss_mb",
                                                                               "torch_peak_rss_mb"))
        print(row.format(line["case"], line["threads"], ctk_rate, "%.1f" % tch["rate"], ratio, spread,
                         line["unit"], faults, rss, line["load_avg"]), file=out)
    notes = {}
    for line in lines:
        if "error" in line["ctk"]:
            notes.setdefault(line["case"], "ctk error: " + line["ctk"]["error"])
        elif "check" in line and not line["check"]["ok"]:
            notes.setdefault(line["case"], "ctk result differs from torch: %s" % line["check"])
        elif "check" in line and "training step not checked" in line["check"].get("checked", ""):
            notes.setdefault(line["case"], "checked: " + line["check"]["checked"])
        elif line["ctk"].get("cuda_graph_status"):  # the steps were not replayed: why
            notes.setdefault(line["case"], "ctk CUDA Graph: " + line["ctk"]["cuda_graph_status"])
    for name, note in notes.items():
        print("%s: %s" % (name, note), file=out)


def torch_worker(args):
    """The body of one --torch-subprocess round: time the case, print one JSON line."""
    case = json.loads(args.torch_worker)
    threads = int(args.threads)
    base_rss = status_mb("VmRSS")  # the interpreter with torch, numpy and this script loaded
    workload, backend = torch_workload(case, args.device, args.dtype)
    result = time_torch(case, threads, workload, args)
    result["backend"] = backend
    result["base_rss_mb"] = round(base_rss, 1)
    result["peak_rss_mb"] = round(status_mb("VmHWM"), 1)
    print(json.dumps(result))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ctk-bench", default="build/bench/ctk_bench", help="path of the ctk_bench driver")
    parser.add_argument("--cases", default="", help="comma-separated case names or globs (default: all)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2; "
                        "one count, 1, on a GPU)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="where both sides run (cuda: GPU 0, PyTorch with CUDA)")
    parser.add_argument("--dtype", default="f32", choices=["f32", "bf16"],
                        help="element type of the inputs (bf16: 16-bit inputs and outputs, f32 accumulation)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved ctk/torch rounds (default 5)")
    parser.add_argument("--min-time", type=float, default=1.0, help="timed seconds per side per round")
    parser.add_argument("--warmup", type=float, default=0.3, help="warm-up seconds per side per round")
    parser.add_argument("--require-ratio", type=float, default=None,
                        help="exit 1 if any ratio (ctk/torch) is below this, or a ctk case failed")
    parser.add_argument("--allow-non-openblas", action="store_true",
                        help="measure even if torch is not on OpenBLAS (prints a warning)")
    parser.add_argument("--no-check", action="store_true",
                        help="skip checking ctk's outputs against torch (float64) before timing a case")
    parser.add_argument("--torch-subprocess", action="store_true",
                        help="run each torch round in a fresh interpreter (as ctk's), so torch's timing does "
                             "not depend on the allocator state earlier cases left behind")
    parser.add_argument("--ctk-openblas-core", default=None,
                        help="OPENBLAS_CORETYPE for ctk_bench too, to stand for another CPU (e.g. Haswell with "
                             "ONEDNN_MAX_CPU_ISA=AVX2 and CTK_GEMM=openblas: an AVX2 machine)")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    parser.add_argument("--torch-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    global CTK_OPENBLAS_CORE
    CTK_OPENBLAS_CORE = args.ctk_openblas_core
    try:
        thread_counts = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        parser.error("--threads takes comma-separated integers")
    if not thread_counts or min(thread_counts) < 1:
        parser.error("--threads needs counts >= 1")

    cases = list_cases(args.ctk_bench)
    if args.device == "cpu":
        cases = [c for c in cases if not c.get("gpu_only")]
    cases = select_cases(cases, args.cases)
    if args.list:
        for case in cases:
            print(json.dumps(case))
        return 0
    if args.device == "cuda":
        if not torch.cuda.is_available():
            fail("compare.py: --device cuda, but torch sees no GPU")
        # Both sides run f32 exactly: no TF32 tensor cores in torch's convolutions (its default allows them).
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        thread_counts = [1]
        blas = "cuBLAS/cuDNN on %s" % torch.cuda.get_device_name(0)
    else:
        blas = check_torch_blas(args.allow_non_openblas)
    load_start = os.getloadavg()
    print("compare.py: torch %s (BLAS %s, %s), %d cases x threads %s, %d rounds, min-time %gs; load average %s"
          % (torch.__version__, blas, "fresh process per round" if args.torch_subprocess else "in-process",
             len(cases), thread_counts, args.rounds, args.min_time, " ".join("%.2f" % v for v in load_start)),
          file=sys.stderr)

    lines = []
    for case in cases:
        check = None if args.no_check else check_case(case, args)
        if check is not None and not check["ok"]:
            print("WARNING: %s: ctk's result differs from torch's: %s" % (case["case"], check), file=sys.stderr)
        for threads in thread_counts:
            line = measure(case, threads, args, check)
            print(json.dumps(line, separators=(",", ":")), flush=True)
            lines.append(line)

    load_end = os.getloadavg()
    header = ("\nctk vs torch %s (%s), medians of %d interleaved rounds; ratio = ctk / torch (> 1: ctk faster)"
              "\nload average at start %s, at end %s" % (
                  torch.__version__, "fresh process per round" if args.torch_subprocess else "in-process",
                  args.rounds, " ".join("%.2f" % v for v in load_start), " ".join("%.2f" % v for v in load_end)))
    print_table(lines, header, sys.stderr)

    if args.require_ratio is not None:
        failing = [l for l in lines if l["ratio"] is None or l["ratio"] < args.require_ratio]
        if failing:
            print("compare.py: %d of %d results below --require-ratio %g: %s"
                  % (len(failing), len(lines), args.require_ratio,
                     ", ".join("%s@%d" % (l["case"], l["threads"]) for l in failing)), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
