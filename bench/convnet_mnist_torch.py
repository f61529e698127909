#!/usr/bin/python3
"""The PyTorch twin of examples/Image/Classification/MNIST/ConvNet_MNIST.cpp (CNTK's ConvNet_MNIST.py).

Same network, initialisation, data, minibatches, schedules and epochs, with CNTK's semantics translated
exactly: the loss is summed over the minibatch; a per-sample learning rate applies to that summed
gradient; per-sample momentum m is m**n for a minibatch of n samples; momentum is unit-gain
(smoothed = m * smoothed + (1 - m) * lr * grad; w -= smoothed), written out by hand below rather than
through torch.optim.SGD. Reads the CTF files `ctk data mnist` writes. Runs on Debian's /usr/bin/python3
(torch 1.13, numpy). bench/compare.py imports ConvNet from here for its train_convnet/eval_convnet cases.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

EPOCH_SIZE = 60000
MINIBATCH_SIZE = 64
# CNTK's example: per-sample rates 0.001 for 10 epochs, 0.0005 for 10, then 0.0001; no momentum for 5
# epochs, then a per-sample momentum of 0.9990239141819757 (a time constant of 1024 samples).
LR_PER_SAMPLE = [0.001] * 10 + [0.0005] * 10 + [0.0001]
MOMENTUM_PER_SAMPLE = [0.0] * 5 + [0.9990239141819757]


class ConvNet(nn.Module):
    """CNTK's ConvNet_MNIST: x/256; conv 5x5x32 same, ReLU, maxpool 3x3 s2; conv 3x3x48 valid, ReLU,
    maxpool 3x3 s2; conv 3x3x64 valid, ReLU; dense 96 ReLU; dropout 0.5; dense 10. The pools do not pad
    (28 -> 13, 11 -> 5), so the flattened conv3 output is 64 x 3 x 3 = 576."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 48, 3)
        self.conv3 = nn.Conv2d(48, 64, 3)
        self.fc1 = nn.Linear(576, 96)
        self.dropout = nn.Dropout(0.5)
        self.fc2 = nn.Linear(96, 10)

    def forward(self, x):
        x = x * 0.00390625
        x = F.max_pool2d(F.relu(self.conv1(x)), 3, 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 3, 2)
        x = F.relu(self.conv3(x))
        x = self.dropout(F.relu(self.fc1(x.flatten(1))))
        return self.fc2(x)


def glorot_init_(model):
    """CNTK's defaults: glorot_uniform weights (conv: fan_in = C*kh*kw, fan_out = O*kh*kw; dense: in, out),
    which is torch's xavier_uniform_ on torch's layouts; zero biases."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def read_ctf(path):
    """A CTF file of `|labels <10 values> |features <784 values>` lines as (features [N,1,28,28] float32,
    labels [N] int64), parsed by numpy in one pass."""
    with open(path, "rb") as f:
        text = f.read()
    first = text[:text.index(b"\n")].split()
    if first[0] != b"|labels" or first[11] != b"|features" or len(first) != 796:
        sys.exit("%s: expected lines '|labels <10 values> |features <784 values>'" % path)
    text = text.replace(b"|labels", b"").replace(b"|features", b"").decode("ascii")
    data = np.fromstring(text, dtype=np.float32, sep=" ").reshape(-1, 794)  # ~1 s per 10000 lines
    labels = data[:, :10].argmax(axis=1).astype(np.int64)
    return torch.from_numpy(np.ascontiguousarray(data[:, 10:]).reshape(-1, 1, 28, 28)), torch.from_numpy(labels)


def scheduled(values, epoch):
    return values[min(epoch, len(values) - 1)]


def train(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    train_x, train_y = read_ctf(os.path.join(args.data, "Train-28x28_cntk_text.txt"))
    test_x, test_y = read_ctf(os.path.join(args.data, "Test-28x28_cntk_text.txt"))
    print("Read %d training and %d test samples in %.1fs" % (len(train_y), len(test_y), time.time() - t0))

    model = glorot_init_(ConvNet())
    params = list(model.parameters())
    smoothed = [torch.zeros_like(p) for p in params]
    print("Training %d parameters in %d parameter tensors.\n" % (sum(p.numel() for p in params), len(params)))

    last_lr = last_mom = None
    position, order = 0, rng.permutation(len(train_y))
    for epoch in range(args.epochs):
        # Schedules advance every EPOCH_SIZE samples; an epoch is exactly EPOCH_SIZE samples, so the
        # value in force is the epoch's entry.
        lr, mom_per_sample = scheduled(LR_PER_SAMPLE, epoch), scheduled(MOMENTUM_PER_SAMPLE, epoch)
        if lr != last_lr:
            print("Learning rate per 1 samples: %r" % lr)
            last_lr = lr
        if mom_per_sample != last_mom:
            print("Momentum per 1 samples: %r" % mom_per_sample)
            last_mom = mom_per_sample
        model.train()
        start, loss_sum, err_sum, seen = time.time(), 0.0, 0, 0
        while seen < EPOCH_SIZE:
            # As ConvNet_MNIST.cpp: min(64, what is left of the epoch) (the last minibatch has 32); the
            # reader continues through a fresh random order per sweep.
            n = min(MINIBATCH_SIZE, EPOCH_SIZE - seen)
            if position + n > len(order):
                order, position = np.concatenate([order[position:], rng.permutation(len(train_y))]), 0
            idx = torch.from_numpy(order[position:position + n])
            position += n
            x, y = train_x[idx], train_y[idx]
            z = model(x)
            loss = F.cross_entropy(z, y, reduction="sum")  # CNTK sums the loss over the minibatch
            for p in params:
                p.grad = None
            loss.backward()
            m = mom_per_sample ** n  # per-sample momentum, raised to the minibatch size
            with torch.no_grad():
                for p, s in zip(params, smoothed):
                    # CNTK's unit-gain momentum SGD: s = m s + (1 - m) lr g; w -= s.
                    s.mul_(m).add_(p.grad, alpha=(1.0 - m) * lr)
                    p.sub_(s)
            loss_sum += float(loss)
            err_sum += int((z.argmax(1) != y).sum())
            seen += n
        seconds = time.time() - start
        print("Finished Epoch[%d of %d]: [Training] loss = %0.6f * %d, metric = %0.2f%% * %d %0.3fs (%5.1f samples/s);"
              % (epoch + 1, args.epochs, loss_sum / seen, seen, 100.0 * err_sum / seen, seen, seconds,
                 seen / seconds), flush=True)

    model.eval()
    errors, tested, minibatches = 0, 0, 0
    with torch.no_grad():
        for begin in range(0, 10000, 1024):
            x, y = test_x[begin:begin + 1024], test_y[begin:begin + 1024]
            errors += int((model(x).argmax(1) != y).sum())
            tested += len(y)
            minibatches += 1
    # ConvNet_MNIST.cpp (as CNTK's script) prints one more than the number of test minibatches.
    print("\nFinal Results: Minibatch[1-%d]: errs = %0.2f%% * %d\n" % (minibatches + 1, 100.0 * errors / tested,
                                                                     tested))
    return errors / tested


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("CTK_DATA_DIR", "data/fashion-mnist"),
                        help="folder with Train-28x28_cntk_text.txt and Test-28x28_cntk_text.txt")
    parser.add_argument("--epochs", type=int, default=40, help="epochs of 60000 samples (default 40)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the initialisation, order and dropout")
    args = parser.parse_args()
    start = time.time()
    error = train(args)
    print("Error: %f" % error)
    print("Wall time: %.1fs" % (time.time() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
