#!/usr/bin/env python3
"""Python-side overhead of a training step: CNTK's MLP trained from Python (`import cntk as C`) against the
same step in C++ (`ctk_bench --case train_mlp`), same model, batch, learner, threads and machine.

The MLP is bench/ctk_bench.cpp's train_mlp: 784-200-200-10 (Dense+relu, Dense+relu, Dense),
cross_entropy_with_softmax and classification_error, momentum SGD (0.001 per sample, momentum 0.9),
batch 64, 8 random minibatches cycled. Python feeds NumPy arrays each step, as a CNTK script does.
Rounds alternate C++ and Python so that both see the same machine state; the ratio is of medians.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py --ctk-bench build/bench/ctk_bench
       [--threads 1] [--rounds 5] [--min-time 2]
Target (issue 5): Python costs less than 5% more than C++ (ratio < 1.05).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np


def python_step_times(threads, min_time, warmup):
    import cntk as C
    import ctk
    ctk.set_num_threads(threads)
    rng = np.random.default_rng(0)
    x = C.input_variable(784)
    y = C.input_variable(10)
    with C.layers.default_options(activation=C.relu):
        z = C.layers.Sequential([C.layers.Dense(200), C.layers.Dense(200), C.layers.Dense(10, activation=None)])(x)
    ce = C.cross_entropy_with_softmax(z, y)
    pe = C.classification_error(z, y)
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.001),
                             C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (ce, pe), [learner])
    batches = []
    for _ in range(8):
        xb = rng.uniform(0, 1, (64, 784)).astype(np.float32)
        yb = np.zeros((64, 10), np.float32)
        yb[np.arange(64), rng.integers(0, 10, 64)] = 1
        batches.append({x: xb, y: yb})
    i = 0
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        trainer.train_minibatch(batches[i % 8])
        i += 1
    times = []
    end = time.perf_counter() + min_time
    while time.perf_counter() < end or len(times) < 20:
        start = time.perf_counter()
        trainer.train_minibatch(batches[i % 8])
        times.append(time.perf_counter() - start)
        i += 1
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ctk-bench', required=True, help='path of build/bench/ctk_bench')
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--min-time', type=float, default=2.0)
    parser.add_argument('--warmup', type=float, default=0.5)
    args = parser.parse_args()

    if args.rounds < 1:
        parser.error('--rounds must be at least 1')
    cpp, py = [], []
    for r in range(args.rounds):
        out = subprocess.run([args.ctk_bench, '--case', 'train_mlp', '--threads', str(args.threads),
                              '--min-time', str(args.min_time), '--warmup', str(args.warmup)],
                             check=True, capture_output=True, text=True).stdout
        cpp.append(json.loads(out.strip().splitlines()[-1])['median_s'])
        py.append(statistics.median(python_step_times(args.threads, args.min_time, args.warmup)))
        print('round {}: C++ {:.3f} ms, Python {:.3f} ms per step'.format(r + 1, cpp[-1] * 1e3, py[-1] * 1e3),
              file=sys.stderr)
    c, p = statistics.median(cpp), statistics.median(py)
    print('train_mlp batch 64, {} thread(s), {} rounds: C++ {:.3f} ms, Python {:.3f} ms per step; '
          'Python/C++ = {:.3f} (target < 1.05)'.format(args.threads, args.rounds, c * 1e3, p * 1e3, p / c))


if __name__ == '__main__':
    main()
