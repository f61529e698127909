#!/usr/bin/python3
"""oneDNN's sgemm against OpenBLAS's on the products that decide ctk's CPU GEMM route
(docs/ctk_info.md): both libraries called directly through ctypes, row-major, in one process, interleaved
for --rounds rounds; prints GFLOP/s per shape and thread count, and which library wins.

To stand for another CPU, hold the libraries to its level before they load, e.g. an AVX2 machine:
    OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2 /usr/bin/python3 bench/gemm_shapes.py
"""

import argparse
import ctypes
import ctypes.util
import os
import statistics
import time

import numpy as np

# (m, n, k, transpose A, transpose B, what it is)
SHAPES = [
    (64, 200, 784, False, False, "the MLP's first layer"),
    (64, 784, 200, False, True, "its input gradient"),
    (784, 200, 64, True, False, "its weight gradient"),
    (32, 1024, 256, False, False, "an LSTM step"),
    (1120, 10000, 256, False, True, "a 10k softmax layer"),
    (256, 10000, 1120, True, False, "its weight gradient"),
    (512, 512, 512, False, False, "512^3"),
    (1024, 1024, 1024, False, False, "1024^3"),
    (128, 128, 128, False, False, "128^3 (2^21)"),
    (101, 101, 101, False, False, "101^3 (about 2^20)"),
    (64, 64, 64, False, False, "64^3"),
    (48, 48, 48, False, False, "48^3"),
    (32, 32, 32, False, False, "32^3"),
]


def load():
    blas = ctypes.CDLL(ctypes.util.find_library("openblas") or "libopenblas.so.0")
    dnnl = ctypes.CDLL(ctypes.util.find_library("dnnl") or "libdnnl.so.2")
    gomp = ctypes.CDLL(ctypes.util.find_library("gomp") or "libgomp.so.1")
    f, i, p = ctypes.c_float, ctypes.c_int, ctypes.c_void_p
    blas.cblas_sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
    dnnl.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, f,
                                p, ctypes.c_int64, p, ctypes.c_int64, f, p, ctypes.c_int64]
    blas.openblas_get_corename.restype = ctypes.c_char_p
    return blas, dnnl, gomp


def timed(call, min_time):
    call()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 3:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=0.3)
    args = parser.parse_args()
    blas, dnnl, gomp = load()
    held = "held to " + os.environ["ONEDNN_MAX_CPU_ISA"] if "ONEDNN_MAX_CPU_ISA" in os.environ else "at the CPU's ISA"
    print("OpenBLAS core %s; oneDNN %s" % (blas.openblas_get_corename().decode(), held))
    print("%-24s %-28s %4s %9s %9s  %s" % ("m x n x k", "", "thr", "oneDNN", "OpenBLAS", "faster"))
    rng = np.random.default_rng(0)
    for m, n, k, ta, tb, what in SHAPES:
        a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
        c = np.zeros((m, n), np.float32)
        lda, ldb = a.shape[1], b.shape[1]
        pa, pb, pc = (x.ctypes.data_as(ctypes.c_void_p) for x in (a, b, c))

        def run_blas():
            blas.cblas_sgemm(101, 112 if ta else 111, 112 if tb else 111, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, n)

        def run_dnnl():
            dnnl.dnnl_sgemm(b"T" if ta else b"N", b"T" if tb else b"N", m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, n)

        for threads in [int(t) for t in args.threads.split(",")]:
            blas.openblas_set_num_threads(threads)
            gomp.omp_set_num_threads(threads)
            d, o = [], []
            for _ in range(args.rounds):
                d.append(timed(run_dnnl, args.min_time))
                o.append(timed(run_blas, args.min_time))
            flops = 2.0 * m * n * k
            gd, go = flops / statistics.median(d) / 1e9, flops / statistics.median(o) / 1e9
            name = "%dx%dx%d %s%s" % (m, n, k, "T" if ta else "N", "T" if tb else "N")
            print("%-24s %-28s %4d %9.1f %9.1f  %s" % (name, what, threads, gd, go, "oneDNN" if gd > go else "OpenBLAS"))


if __name__ == "__main__":
    main()
