"""PyTorch's twin of CNTK's TrainResNet_CIFAR10.py -n resnet20 on the same CIFAR-10 layout (PNG files,
map files and mean file, e.g. `ctk data images` of Fashion-MNIST): the same ResNet-20 (bench/resnet_torch.py,
CNTK's he_normal convolutions without bias, batch normalization with CNTK's time constant 4096, a
normal(0.01) Dense), the same augmentation (a random square crop of 0.8 of the side, a flip, a bilinear
scale to 32x32, CNTK's reading of the mean file, BGR planes), the same schedule (minibatch 128,
learning rate 1.0 per minibatch, unit-gain momentum 0.9, L2 1e-4 except on batch normalization), and
the same test (the 10,000 test images scaled, mean subtracted). Prints one line per epoch and the test
error, to compare with the error CNTK's script prints under ctk.

    python3 bench/resnet_cifar_twin.py --datadir DIR --epochs 3 [--epoch-size 50000] [--threads 2]
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_reader_compare import TorchCifarSet  # noqa: E402
from resnet_torch import resnet20  # noqa: E402


class TestSet(TorchCifarSet):
    """The test images: scaled and mean-subtracted, no crop or flip."""

    def __getitem__(self, i):
        import torchvision.transforms.functional as F
        from PIL import Image
        path, label = self.items[i]
        img = F.resize(Image.open(path).convert('RGB'), [32, 32], interpolation=F.InterpolationMode.BILINEAR)
        t = F.pil_to_tensor(img).float()[[2, 1, 0]] - torch.from_numpy(self.mean)
        return t, int(label)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--datadir', required=True)
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--epoch-size', type=int, default=50000, help="samples per epoch (CNTK's script: 50000)")
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--seed', type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    mean = os.path.join(a.datadir, 'CIFAR-10_mean.xml')
    # The script's crop: side_ratio=0.8 with jitter 'uniratio' is the range (0.8, 0.8): always 0.8 of the side.
    train = torch.utils.data.DataLoader(TorchCifarSet(os.path.join(a.datadir, 'train_map.txt'), mean, (0.8, 0.8)),
                                        batch_size=128, shuffle=True, num_workers=1, drop_last=False)
    test = torch.utils.data.DataLoader(TestSet(os.path.join(a.datadir, 'test_map.txt'), mean), batch_size=16)
    net = resnet20(10)
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode='fan_in', nonlinearity='relu')
        elif isinstance(m, nn.BatchNorm2d):
            m.momentum = 1 - math.exp(-128 / 4096)  # CNTK's normalization_time_constant 4096
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)
    bn = [q for m in net.modules() if isinstance(m, nn.BatchNorm2d) for q in m.parameters()]
    bn_ids = {id(q) for q in bn}
    rest = [q for q in net.parameters() if id(q) not in bn_ids]
    # CNTK's unit-gain momentum: v = 0.9 v + 0.1 g; w -= lr v (PyTorch's dampening 0.9).
    opt = torch.optim.SGD([{'params': rest, 'weight_decay': 1e-4}, {'params': bn, 'weight_decay': 0.0}],
                          lr=1.0, momentum=0.9, dampening=0.9)
    loss_fn = nn.CrossEntropyLoss()
    def batches():  # the shuffled training set, sweep after sweep (CNTK's epochs are sample counts)
        while True:
            yield from train

    stream = batches()
    for epoch in range(a.epochs):
        net.train()
        start, seen, loss_sum, wrong = time.perf_counter(), 0, 0.0, 0
        while seen < a.epoch_size:
            x, y = next(stream)
            x, y = x[:a.epoch_size - seen], y[:a.epoch_size - seen]
            opt.zero_grad()
            out = net(x)
            loss = loss_fn(out, y)
            loss.backward()
            opt.step()
            seen += x.shape[0]
            loss_sum += loss.item() * x.shape[0]
            wrong += (out.argmax(1) != y).sum().item()
        dt = time.perf_counter() - start
        print('Finished Epoch[%d of %d]: [Training] loss = %f * %d, metric = %.2f%% * %d %.3fs (%.1f samples/s);'
              % (epoch + 1, a.epochs, loss_sum / seen, seen, 100.0 * wrong / seen, seen, dt, seen / dt), flush=True)
    net.eval()
    wrong, seen = 0, 0
    with torch.no_grad():
        for x, y in test:
            wrong += (net(x).argmax(1) != y).sum().item()
            seen += x.shape[0]
    print('Test error: %.2f%% * %d' % (100.0 * wrong / seen, seen), flush=True)


if __name__ == '__main__':
    main()
