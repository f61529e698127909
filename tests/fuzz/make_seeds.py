"""Writes the generated seeds of the fuzz targets (tests/fuzz/seeds/TARGET/gen_*): small files of each
format as ctk writes them, and the shapes of corruption that crashed or bloated ctk before (an ONNX
LSTM export whose Expand takes its shape from an int64 tensor, gzip streams longer than their header
announces, bytes that are not UTF-8). The seeds not named gen_* are CNTK's own files (see README.md).

    PYTHONPATH=build/python python3 tests/fuzz/make_seeds.py
"""
import gzip
import os
import struct

import numpy as np

import cntk as C

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'seeds')


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, 'gen_' + name), 'wb') as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, mtime=0)  # no time stamp: the same bytes every run


def ctf_seeds():
    write('ctf', 'dense_sparse_shaped.ctf',
          b'0 |x 1 2 3 |y 0:1 4:0.5 |img 1 2 3 4\n'
          b'0 |x 4 5 6 |# a comment\n'
          b'1\t|y 2:1\t|x -1e-3 2.5e2 3 |img 0 0 0 1\r\n'
          b'2 |x 1 2 3 |y 1:1 |img 9 8 7 6\n')
    write('ctf', 'not_utf8.ctf', b'0 |x 1 \xff 3 |y 0:1\n|x\xc3 1 2 3\n')


def idx_seeds():
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, 3 * 4 * 4, dtype=np.uint8).tobytes()
    images = struct.pack('>IIII', 0x803, 3, 4, 4) + pixels
    labels = struct.pack('>II', 0x801, 3) + bytes([1, 7, 3])
    write('idx_images', 'three.idx3', images)
    write('idx_images', 'three.idx3.gz', gz(images))
    write('idx_images', 'bomb.idx3.gz', gz(images + bytes(1 << 16)))  # far more than announced
    write('idx_labels', 'three.idx1', labels)
    write('idx_labels', 'three.idx1.gz', gz(labels))
    write('idx_labels', 'bomb.idx1.gz', gz(labels + bytes(1 << 16)))


def cifar_seeds():
    rng = np.random.default_rng(2)
    records = b''.join(bytes([label]) + rng.integers(0, 256, 3072, dtype=np.uint8).tobytes() for label in (3, 9))
    write('cifar', 'two_records.bin', records)


def png(rgb):
    """A PNG file of an [H, W, 3] uint8 array."""
    import zlib
    h, w = rgb.shape[:2]
    raw = b''.join(b'\x00' + rgb[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +
            chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def image_seeds():
    import base64
    img = (np.arange(6 * 5 * 3) * 7 % 256).astype(np.uint8).reshape(6, 5, 3)
    write('image', 'six_by_five.png', png(img))
    write('base64_image', 'two_lines.txt', b''.join(b'%d\t%s\n' % (i, base64.b64encode(png(img[i:]))) for i in range(2)))
    write('base64_image', 'keyed.txt', b'k1\t3\t' + base64.b64encode(png(img)) + b'\n')


def model_seeds():
    C.cntk_py.set_fixed_random_seed(1)
    s = C.sequence.input_variable(5, name='s')
    lstm = C.layers.Recurrence(C.layers.LSTM(6))(s)
    x = C.input_variable((1, 6, 6), name='x')
    conv = C.layers.Sequential([C.layers.Convolution2D((3, 3), 2, pad=True, activation=C.relu),
                                C.layers.MaxPooling((2, 2), strides=2), C.layers.Dense(3)])(x)
    reshaped = C.reshape(C.layers.Dense(12)(C.input_variable(4, name='v')), (3, 4))
    for name, model in (('lstm', lstm), ('conv', conv), ('reshape', reshaped)):
        for fmt, target, ext in ((C.ModelFormat.CNTKv2, 'cntk_v2', 'dnn'), (C.ModelFormat.ONNX, 'onnx', 'onnx')):
            path = '/tmp/ctk_seed.' + ext
            model.save(path, format=fmt)
            with open(path, 'rb') as f:
                write(target, name + '.' + ext, f.read())
    # A trainer checkpoint's state (.ckp): a CNTK Dictionary with learner state.
    y = C.input_variable(3)
    trainer = C.Trainer(conv, (C.cross_entropy_with_softmax(conv, y), C.classification_error(conv, y)),
                        [C.momentum_sgd(conv.parameters, C.learning_parameter_schedule(0.1),
                                        C.momentum_schedule(0.9))])
    trainer.train_minibatch({x: np.ones((2, 1, 6, 6), np.float32), y: np.eye(3, dtype=np.float32)[:2]})
    trainer.save_checkpoint('/tmp/ctk_seed.model')
    with open('/tmp/ctk_seed.model.ckp', 'rb') as f:
        write('cntk_dictionary', 'trainer.ckp', f.read())


class _SeedOffset(C.ops.functions.UserFunction):
    """x + 1 with a state of every kind a saved user function's state can hold."""
    __module__ = 'ctk_fuzz_seed'  # the same bytes whoever imports this file

    def __init__(self, arg, name='offset'):
        super().__init__([arg], name=name)

    def forward(self, argument, device=None, outputs_to_retain=None):
        return None, argument + 1

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def serialize(self):
        return {'int': 3, 'float': 0.5, 'text': 'x', 'none': None, 'list': [1, [2.0]], 'dict': {'b': True},
                'array': np.arange(4, dtype=np.float32).reshape(2, 2)}


def user_function_seed():
    # A CNTK v2 model holding a user function (CNTK's UserDefinedFunction entry and its state).
    x = C.input_variable(3, name='x')
    model = C.layers.Dense(2)(C.user_function(_SeedOffset(x)))
    model.save('/tmp/ctk_seed.dnn')
    with open('/tmp/ctk_seed.dnn', 'rb') as f:
        write('cntk_v2', 'user_function.dnn', f.read())


if __name__ == '__main__':
    ctf_seeds()
    idx_seeds()
    cifar_seeds()
    image_seeds()
    model_seeds()
    user_function_seed()
