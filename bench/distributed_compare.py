#!/usr/bin/python3
"""Data-parallel training, ctk against PyTorch DDP, on the same model, per-worker batch and workers.

For each model (the ConvNet_MNIST and ResNet-20 training cases of ctk_bench) and each worker count, runs
`mpiexec -n N ctk_bench --case train_<model> --data-parallel 32|1` and the same model with PyTorch's
DistributedDataParallel (gloo backend, Debian's torch) under the same mpiexec, one thread per worker,
and prints one JSON line per run: the job's samples/s, the scaling efficiency (samples/s at N workers /
N x samples/s at 1 worker) and the gradient bytes each worker sends per step (ctk: its learner's count;
DDP: 2 (N - 1) / N of the gradients, a ring all-reduce's traffic, the least gloo can send). Weak scaling:
each worker processes the case's batch. On a machine with fewer cores than workers the workers share
cores (--oversubscribe): say so when quoting such figures. Run with /usr/bin/python3.

    /usr/bin/python3 bench/distributed_compare.py [--workers 1,2,4] [--models convnet,resnet20]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
BATCH = {'convnet': 64, 'resnet20': 128}  # ctk_bench's train_convnet and train_resnet20 batches


def mpiexec(n, args, env_extra=None):
    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism='none', OMP_NUM_THREADS='1')
    env.update(env_extra or {})
    cmd = [shutil.which('mpiexec'), '--allow-run-as-root', '--oversubscribe', '--bind-to', 'none', '-n', str(n)]
    out = subprocess.run(cmd + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=1800)
    lines = [line for line in out.stdout.splitlines() if line.startswith('{')]
    if out.returncode != 0 or not lines:
        sys.exit('failed: %s\n%s' % (' '.join(cmd + args), out.stdout[-3000:]))
    return json.loads(lines[-1])


# ---- the torch worker (run under mpiexec by this script itself) -------------------------------------

def torch_worker(model_name, steps):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    sys.path.insert(0, BENCH_DIR)
    from convnet_mnist_torch import ConvNet
    from resnet_torch import resnet20

    rank, size = int(os.environ['OMPI_COMM_WORLD_RANK']), int(os.environ['OMPI_COMM_WORLD_SIZE'])
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
    os.environ.setdefault('MASTER_PORT', '29517')
    torch.set_num_threads(1)
    dist.init_process_group('gloo', rank=rank, world_size=size)
    torch.manual_seed(0)
    model = ConvNet() if model_name == 'convnet' else resnet20()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.001, momentum=0.9)
    batch = BATCH[model_name]
    shape = (batch, 1, 28, 28) if model_name == 'convnet' else (batch, 3, 32, 32)
    xs = [torch.rand(shape) * (256 if model_name == 'convnet' else 1) for _ in range(8)]
    ys = [torch.randint(0, 10, (batch,)) for _ in range(8)]

    def step(i):
        opt.zero_grad()
        loss = F.cross_entropy(ddp(xs[i % 8]), ys[i % 8], reduction='sum')
        loss.backward()
        opt.step()

    for i in range(3):
        step(i)
    dist.barrier()
    seconds = []
    for i in range(steps):
        start = time.perf_counter()
        step(i)
        seconds.append(time.perf_counter() - start)
    median = torch.tensor([sorted(seconds)[len(seconds) // 2]])
    dist.all_reduce(median, op=dist.ReduceOp.MAX)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    if rank == 0:
        print(json.dumps({'side': 'torch', 'workers': size, 'median_s': median.item(),
                          'rate': batch * size / median.item(),
                          'bytes_sent_per_step': 2 * (size - 1) * grad_bytes // size if size > 1 else 0}))
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--ctk-bench', default=os.path.join(BENCH_DIR, '..', 'build', 'bench', 'ctk_bench'))
    parser.add_argument('--workers', default='1,2,4')
    parser.add_argument('--models', default='convnet,resnet20')
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--torch-worker', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args.torch_worker, args.steps)
    workers = [int(n) for n in args.workers.split(',')]
    cores = os.cpu_count()
    for model in args.models.split(','):
        base = {}
        for n in workers:
            runs = [('ctk', 32), ('ctk', 1), ('torch', 32)]
            for side, bits in runs:
                if side == 'ctk':
                    r = mpiexec(n, [args.ctk_bench, '--case', 'train_' + model, '--data-parallel', str(bits),
                                    '--steps', str(args.steps), '--threads', '1'])
                else:
                    r = mpiexec(n, [sys.executable, os.path.abspath(__file__), '--torch-worker', model,
                                    '--steps', str(args.steps)])
                key = (side, bits)
                if n == workers[0]:
                    base[key] = r['rate'] / n
                line = {'model': model, 'side': side, 'bits': bits, 'workers': n, 'cores': cores,
                        'oversubscribed': n > cores, 'samples_per_s': round(r['rate'], 1),
                        'scaling_efficiency': round(r['rate'] / (n * base[key]), 3),
                        'bytes_sent_per_step': r['bytes_sent_per_step']}
                print(json.dumps(line), flush=True)


if __name__ == '__main__':
    main()
