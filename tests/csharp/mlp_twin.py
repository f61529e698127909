#!/usr/bin/env python3
"""The Python twin of tests/csharp/api_test.cs and mlp_twin.cpp: the same MLP, seed, data order and learner
through CNTK's Python API (`import cntk as C`), Fashion-MNIST read from its IDX files with NumPy and fed
in file order as the reader gives it (one-frame sequences, one-hot labels in index form). Writes every
minibatch's loss and the trained parameters in mlp_twin.cpp's format.
Usage: PYTHONPATH=build/python python3 mlp_twin.py DATA_DIR OUT_FILE [SAMPLES]"""
import gzip
import os
import sys

import numpy as np
import cntk as C


def idx(path, header):
    opener = gzip.open if not os.path.exists(path) else open
    with opener(path if os.path.exists(path) else path + '.gz', 'rb') as f:
        return np.frombuffer(f.read()[header:], dtype=np.uint8)


def main():
    data, out_path = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[3]) if len(sys.argv) > 3 else 60000
    images = idx(os.path.join(data, 'train-images-idx3-ubyte'), 16).reshape(-1, 784)[:samples].astype(np.float32)
    labels = idx(os.path.join(data, 'train-labels-idx1-ubyte'), 8)[:samples]
    C.cntk_py.reset_random_seed(1)
    x = C.sequence.input_variable(784, name='features')
    y = C.sequence.input_variable(10, name='labels')
    w1 = C.parameter((784, 200), init=C.glorot_uniform(), name='W1')
    b1 = C.parameter((200,), init=0, name='b1')
    w2 = C.parameter((200, 10), init=C.glorot_uniform(), name='W2')
    b2 = C.parameter((10,), init=0, name='b2')
    h = C.sigmoid(C.times(C.element_times(C.constant(0.00390625, dtype=np.float32), x), w1) + b1)
    z = C.plus(C.times(h, w2), b2, name='z')
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.003125))])
    with open(out_path, 'w') as out:
        for start in range(0, samples, 64):
            end = min(start + 64, samples)
            features = images[start:end].reshape(-1, 1, 784)
            onehot = np.eye(10, dtype=np.float32)[labels[start:end]].reshape(-1, 1, 10)
            trainer.train_minibatch({x: features, y: onehot})
            out.write('loss %r\n' % trainer.previous_minibatch_loss_average)
        for p in (w1, b1, w2, b2):
            out.write('param %s %s\n' % (p.name, ' '.join(repr(float(v)) for v in p.value.reshape(-1))))


if __name__ == '__main__':
    main()
