"""The image reader against torchvision, side by side in one run, on the same PNG files:

1. decode + transform throughput (images/s) per reader thread: ctk's MinibatchSource with CNTK's
   CIFAR-10 training transforms (a random square crop of 0.8..1 of the side with a flip, a bilinear
   scale to 32x32, the mean) against torchvision's DataLoader with the same work (PIL decode, the same
   crop and flip, a bilinear resize, the mean), at 1 and 2 worker threads/processes;
2. ResNet-20 training (ctk, CNTK's API) with the reader in the loop against the same steps on
   minibatches read beforehand: the ratio says how much of the step the reader costs.

    PYTHONPATH=build/python python3 bench/image_reader_compare.py --map DIR/train_map.txt --mean DIR/CIFAR-10_mean.xml

DIR is a CIFAR-10 layout (`ctk data cifar10` or `ctk data images`). Prints one line per measurement and a
summary; --json writes them.
"""
import argparse
import json
import os
import time

import numpy as np


def ctk_source(map_file, mean_file, threads, randomize=True):
    import cntk as C
    import cntk.io.transforms as xforms
    from cntk.io import MinibatchSource, ImageDeserializer, StreamDef, StreamDefs
    transforms = [xforms.crop(crop_type='randomside', side_ratio=(0.8, 1.0), jitter_type='uniratio'),
                  xforms.scale(width=32, height=32, channels=3, interpolations='linear'),
                  xforms.mean(mean_file)]
    src = MinibatchSource(ImageDeserializer(map_file, StreamDefs(
        features=StreamDef(field='image', transforms=transforms), labels=StreamDef(field='label', shape=10))),
        randomize=randomize)
    del C
    return src


def ctk_decode_rate(map_file, mean_file, threads, images, batch):
    os.environ['CTK_READER_THREADS'] = str(threads)
    src = ctk_source(map_file, mean_file, threads)
    src.next_minibatch(batch)  # warm: the pool starts, the first chunks load
    start, n = time.perf_counter(), 0
    while n < images:
        n += src.next_minibatch(batch)[src.streams.features].num_samples
    return n / (time.perf_counter() - start)


class TorchCifarSet:
    """The same files and the same work as ctk's transforms, in torchvision."""

    def __init__(self, map_file, mean_file, side_ratio=(0.8, 1.0)):
        import xml.etree.ElementTree as et
        self.side_ratio = side_ratio
        self.items = [line.rstrip('\n').split('\t') for line in open(map_file)]
        root = et.parse(mean_file).getroot()
        values = np.array(root.find('MeanImg').find('data').text.split(), dtype=np.float32)
        self.mean = values.reshape(32, 32, 3).transpose(2, 0, 1).copy()  # CNTK's reading of the file (HWC)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        import torch
        import torchvision.transforms.functional as F
        from PIL import Image
        path, label = self.items[i]
        img = Image.open(path).convert('RGB')
        w, h = img.size
        lo, hi = self.side_ratio
        side = int(round(min(w, h) * (lo if lo == hi else np.random.uniform(lo, hi))))
        x, y = np.random.randint(0, w - side + 1), np.random.randint(0, h - side + 1)
        img = F.crop(img, y, x, side, side)
        if np.random.rand() < 0.5:
            img = F.hflip(img)
        img = F.resize(img, [32, 32], interpolation=F.InterpolationMode.BILINEAR)
        t = F.pil_to_tensor(img).float()[[2, 1, 0]] - torch.from_numpy(self.mean)  # BGR, as CNTK's
        return t, int(label)


def torch_decode_rate(map_file, mean_file, workers, images, batch):
    import torch
    torch.set_num_threads(1)
    ds = TorchCifarSet(map_file, mean_file)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                                         persistent_workers=workers > 0, prefetch_factor=2 if workers else None)
    it = iter(loader)
    next(it)
    start, n = time.perf_counter(), 0
    while n < images:
        try:
            x, _ = next(it)
        except StopIteration:
            it = iter(loader)
            x, _ = next(it)
        n += x.shape[0]
    return n / (time.perf_counter() - start)


def resnet20(x):
    import cntk as C
    from cntk.layers import Convolution, BatchNormalization, Dense, GlobalAveragePooling

    def conv_bn(inp, filters, strides=(1, 1), relu=True):
        c = Convolution((3, 3), filters, activation=None, init=C.he_normal(), pad=True, strides=strides,
                        bias=False)(inp)
        r = BatchNormalization(map_rank=1, normalization_time_constant=4096)(c)
        return C.relu(r) if relu else r

    def block(inp, filters, strides=(1, 1)):
        c2 = conv_bn(conv_bn(inp, filters, strides), filters, relu=False)
        short = inp if strides == (1, 1) else conv_bn(inp, filters, strides, relu=False)
        return C.relu(c2 + short)

    h = conv_bn(x, 16)
    for filters, first_strides in ((16, (1, 1)), (32, (2, 2)), (64, (2, 2))):
        h = block(h, filters, first_strides)
        h = block(h, filters)
        h = block(h, filters)
    return Dense(10, activation=None)(GlobalAveragePooling()(h))


def training_ratio(map_file, mean_file, steps, batch):
    import cntk as C
    x = C.input_variable((3, 32, 32))
    y = C.input_variable(10)
    z = resnet20(x)
    loss = C.cross_entropy_with_softmax(z, y)
    trainer = C.Trainer(z, (loss, C.classification_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.01),
                                        C.momentum_schedule(0.9))])
    src = ctk_source(map_file, mean_file, None)
    imap = {x: src.streams.features, y: src.streams.labels}
    for _ in range(3):  # warm up both paths
        trainer.train_minibatch(src.next_minibatch(batch, input_map=imap))
    start = time.perf_counter()
    for _ in range(steps):
        trainer.train_minibatch(src.next_minibatch(batch, input_map=imap))
    in_loop = steps * batch / (time.perf_counter() - start)
    preloaded = [src.next_minibatch(batch, input_map=imap) for _ in range(steps)]
    start = time.perf_counter()
    for mb in preloaded:
        trainer.train_minibatch(mb)
    ready = steps * batch / (time.perf_counter() - start)
    return in_loop, ready


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--map', required=True)
    p.add_argument('--mean', required=True)
    p.add_argument('--images', type=int, default=4096)
    p.add_argument('--batch', type=int, default=128)
    p.add_argument('--steps', type=int, default=20)
    p.add_argument('--threads', default='1,2')
    p.add_argument('--json')
    a = p.parse_args()
    results = {}
    for t in [int(v) for v in a.threads.split(',')]:
        ctk_rate = ctk_decode_rate(a.map, a.mean, t, a.images, a.batch)
        torch_rate = torch_decode_rate(a.map, a.mean, t, a.images, a.batch)
        results['decode_%d' % t] = {'ctk': ctk_rate, 'torchvision': torch_rate, 'ratio': ctk_rate / torch_rate}
        print('decode+transform, %d thread(s): ctk %.0f images/s, torchvision DataLoader(num_workers=%d) %.0f '
              'images/s, ratio %.2fx' % (t, ctk_rate, t, torch_rate, ctk_rate / torch_rate), flush=True)
    os.environ.pop('CTK_READER_THREADS', None)
    in_loop, ready = training_ratio(a.map, a.mean, a.steps, a.batch)
    results['resnet20'] = {'reader_in_loop': in_loop, 'preloaded': ready, 'ratio': in_loop / ready}
    print('ResNet-20 training, batch %d: %.1f samples/s with the reader in the loop, %.1f on preloaded '
          'minibatches: %.2fx' % (a.batch, in_loop, ready, in_loop / ready), flush=True)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(results, f, indent=2)


if __name__ == '__main__':
    main()
