# The two real CNTK v1 (BrainScript) ResNets in tests/data/cntk/models-v1, evaluated by ctk and by an
# independent float64 NumPy forward pass written here from the models' parameter values, so that a wrong
# convolution padding, stride, batch-normalization convention, shortcut or pooling in ctk's v1 loader shows
# up as wrong logits (the other v1 tests only check shapes and finiteness for these two models).
#
# The reference follows CNTK's definitions, not ctk's code:
# * Convolution with autoPadding (ConvolveGeometry): the output has ceil(in / stride) cells; their kernel
#   centres sit at start + j * stride with start = (in - ((out - 1) * stride + 1)) // 2, and the kernel spans
#   centre - (k - 1) // 2 ... centre + k // 2, zeros outside the image. Without autoPadding (pooling here) the
#   windows are the valid ones, from j * stride.
# * Inference batch normalization, per channel: (x - runMean) / sqrt(runVariance + epsilon) * scale + bias.
#   Files before model version 13 (cifar10.ResNet.cmf is version 10) store the inverse standard deviation
#   isd instead of the variance; CNTK converts it on load as variance = 1 / isd^2 + epsilon. The reference
#   reads isd from the file's bytes, not ctk's converted constant. (On these weights the two epsilons move
#   the logits by less than the tolerance; what is checked is that isd, not a variance, is used.)
# * Kernels are CNTK's column-major [kW x kH x C x O], i.e. NumPy's [O, C, kH, kW]; images [W x H x C] are
#   NumPy's [C, H, W] (ctk exposes the stored values in that row-major order).
# Tolerance: ctk computes in float32, the reference in float64; through ~20 layers the logits agree to
# rtol 1e-4 plus atol 1e-4 * max|logit|, and cross entropy to the same.
import os
import struct

import numpy as np

import cntk as C

MODELS = os.path.join(os.path.dirname(__file__), '..', 'data', 'cntk', 'models-v1')


# ---- the reference layers (float64, a batch [N, C, H, W]) ----

def conv2d_auto_padded(x, w, stride):
    n, c, size, _ = x.shape
    k = w.shape[-1]
    out = -(-size // stride)
    start = (size - ((out - 1) * stride + 1)) // 2
    first_tap = start - (k - 1) // 2
    last_tap = start + (out - 1) * stride + k // 2
    low, high = max(0, -first_tap), max(0, last_tap - (size - 1))
    padded = np.pad(x, ((0, 0), (0, 0), (low, high), (low, high)))
    origin = first_tap + low
    y = np.zeros((n, w.shape[0], out, out))
    span = (out - 1) * stride + 1
    for dy in range(k):
        for dx in range(k):
            rows = slice(origin + dy, origin + dy + span, stride)
            cols = slice(origin + dx, origin + dx + span, stride)
            y += np.einsum('nchw,oc->nohw', padded[:, :, rows, cols], w[:, :, dy, dx])
    return y


def pool_valid(x, reduce, window, stride):
    out = (x.shape[-1] - window) // stride + 1
    y = np.empty(x.shape[:2] + (out, out))
    for i in range(out):
        for j in range(out):
            y[:, :, i, j] = reduce(x[:, :, i * stride:i * stride + window, j * stride:j * stride + window],
                                   axis=(2, 3))
    return y


def batch_norm(x, scale, bias, mean, variance, epsilon):
    per_channel = lambda v: v.reshape(1, -1, 1, 1)
    return (x - per_channel(mean)) / np.sqrt(per_channel(variance) + epsilon) * per_channel(scale) + \
        per_channel(bias)


def relu(x):
    return np.maximum(x, 0)


def cross_entropy_with_softmax(logits, labels):
    top = logits.max(axis=1, keepdims=True)
    log_sum = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
    return log_sum - (labels * logits).sum(axis=1)


# ---- reading the models ----

def values_by_name(model):
    return {v.name: np.asarray(v.value, np.float64) for v in list(model.parameters) + list(model.constants)}


def stored_parameter(file_bytes, name):
    """A float LearnableParameter's values as the file stores them (flat), found by its node name: after
    the marker BMAT come the element size (u64), the matrix's name (NUL-terminated UTF-16), its format
    (i32), rows and columns (u64), then the float32 values."""
    utf16 = lambda s: s.encode('utf-16-le') + b'\0\0'
    node = file_bytes.index(utf16('float') + utf16('LearnableParameter') + utf16(name))
    at = file_bytes.index(utf16('BMAT'), node) + len(utf16('BMAT')) + 8
    while file_bytes[at:at + 2] != b'\0\0':
        at += 2
    rows, cols = struct.unpack_from('<QQ', file_bytes, at + 2 + 4)
    return np.frombuffer(file_bytes, '<f4', rows * cols, at + 2 + 4 + 16).astype(np.float64)


def evaluate(model, data, labels):
    by_name = {v.name: v for v in list(model.arguments) + list(model.outputs)}
    z, ce = by_name['z'], by_name['ce']
    # One sample per sequence: [batch, 1, ...].
    feed = {by_name['features']: list(data[:, None]), by_name['labels']: list(labels[:, None])}
    out = C.combine([z, ce]).eval(feed)
    return np.concatenate(out[z]).astype(np.float64), np.concatenate(out[ce]).reshape(-1).astype(np.float64)


def random_batch(seed):
    rng = np.random.RandomState(seed)
    data = (rng.rand(3, 3, 32, 32) * 255).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[[3, 7, 1]]
    return data, labels


def assert_matches(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


# ---- ResNet20_CIFAR10_DataAug.dnn (model version 18, BrainScript's ResNet20 with projection shortcuts) ----

def resnet20_reference(v, features):
    def conv_bn(x, conv, norm, stride=1):
        return batch_norm(conv2d_auto_padded(x, v[conv + 'W'], stride), v[norm + 'scale'], v[norm + 'bias'],
                          v[norm + 'runMean'], v[norm + 'runVariance'], 1e-5)

    def block(x, name, shortcut=None):
        # name.b: conv 3x3 (stride 2 where the maps double), BN, ReLU, conv 3x3, BN; then + shortcut, ReLU.
        first, second = name + '.b.arrayOfFunctions[0].arrayOfFunctions[0]', name + '.b.arrayOfFunctions[1]'
        stride = 1 if shortcut is None else 2
        h = relu(conv_bn(x, first + '.arrayOfFunctions[0].', first + '.arrayOfFunctions[1].', stride))
        h = conv_bn(h, second + '.arrayOfFunctions[0].', second + '.arrayOfFunctions[1].')
        if shortcut is not None:  # 1x1 convolution with stride 2 and BN
            x = conv_bn(x, shortcut + '.arrayOfFunctions[0].', shortcut + '.arrayOfFunctions[1].', 2)
        return relu(h + x)

    x = features * v['_z.x.x.x.x.x.x.x.x']  # ElementTimes by the constant 1/256
    x = relu(conv_bn(x, 'model.arrayOfFunctions[1].arrayOfFunctions[0].arrayOfFunctions[0].',
                     'model.arrayOfFunctions[1].arrayOfFunctions[0].arrayOfFunctions[1].'))
    for name in ['z.x.x.x.x.x.x.x.x', 'z.x.x.x.x.x.x.x', 'z.x.x.x.x.x.x']:  # 16 maps, 32 x 32
        x = block(x, name)
    x = block(x, '_z.x.x.x.x.x', shortcut='z.x.x.x.x.x.s')  # 32 maps, 16 x 16
    for name in ['z.x.x.x.x.x', 'z.x.x.x.x']:
        x = block(x, name)
    x = block(x, '_z.x.x.x', shortcut='z.x.x.x.s')  # 64 maps, 8 x 8
    for name in ['z.x.x.x', 'z.x.x']:
        x = block(x, name)
    pooled = pool_valid(x, np.mean, 8, 1).reshape(len(x), 64)
    return pooled @ v['model.arrayOfFunctions[8].W'].reshape(64, 10) + v['model.arrayOfFunctions[8].b']


def test_resnet20_matches_a_float64_reference():
    model = C.load_model(os.path.join(MODELS, 'ResNet20_CIFAR10_DataAug.dnn'))
    data, labels = random_batch(0)
    logits, ce = evaluate(model, data, labels)
    want = resnet20_reference(values_by_name(model), data.astype(np.float64))
    assert_matches(logits, want)
    assert_matches(ce, cross_entropy_with_softmax(want, labels))


# ---- cifar10.ResNet.cmf (model version 10, CNTK's tutorial ResNet: zero-padded identity shortcuts) ----

def tutorial_resnet_reference(v, file_bytes, features):
    epsilon = 1e-5

    def conv_bn(x, conv, norm, stride=1):
        # Version 10 stores runInvStdDev: CNTK's variance is 1 / isd^2 + epsilon.
        isd = stored_parameter(file_bytes, norm + '.runInvStdDev')
        variance = 1 / isd ** 2 + epsilon
        y = x if conv is None else conv2d_auto_padded(x, v[conv + '.W'], stride)
        return batch_norm(y, v[norm + '.scale'], v[norm + '.bias'], v[norm + '.runMean'], variance, epsilon)

    def block(x, name):
        h = relu(conv_bn(x, name + '.c1.c', name + '.c1.b'))
        return relu(x + conv_bn(h, name + '.c2.c', name + '.c2.b'))

    def widening_block(x, name):
        # Main path: conv 3x3 stride 2 doubling the maps. Shortcut: every second pixel (max pooling 1x1,
        # stride 2), the zero "pad" constant stacked after it on the channel axis (TransposeDimensions,
        # RowStack, TransposeDimensions), then BN.
        h = relu(conv_bn(x, name + '.c1.c', name + '.c1.b', stride=2))
        h = conv_bn(h, name + '.c2.c', name + '.c2.b')
        every_second = pool_valid(x, np.max, 1, 2)
        zeros = v[name + '.px.pad']  # [maps, 1, 1]
        pad = np.broadcast_to(zeros, (len(x), len(zeros)) + every_second.shape[2:])
        shortcut = conv_bn(np.concatenate([every_second, pad], axis=1), None, name + '.b')
        return relu(shortcut + h)

    x = relu(conv_bn(features, 'z.conv1.c', 'z.conv1.b'))  # the raw 0..255 pixels
    for name in ['z.rn1.r.x.r.x.r', 'z.rn1.r.x.r', 'z.rn1.r']:  # 16 maps, 32 x 32
        x = block(x, name)
    x = widening_block(x, 'z.rn2_1')  # 32 maps, 16 x 16
    for name in ['z.rn2.r.x.r', 'z.rn2.r']:
        x = block(x, name)
    x = widening_block(x, 'z.rn3_1')  # 64 maps, 8 x 8
    for name in ['z.rn3.r.x.r', 'z.rn3.r']:
        x = block(x, name)
    pooled = pool_valid(x, np.mean, 8, 1).reshape(len(x), 64)
    return pooled @ v['z.z.W'].reshape(64, 10) + v['z.z.b']


def test_tutorial_resnet_matches_a_float64_reference():
    path = os.path.join(MODELS, 'cifar10.ResNet.cmf')
    model = C.load_model(path)
    with open(path, 'rb') as f:
        file_bytes = f.read()
    data, labels = random_batch(1)
    logits, ce = evaluate(model, data, labels)
    want = tutorial_resnet_reference(values_by_name(model), file_bytes, data.astype(np.float64))
    assert_matches(logits, want)
    assert_matches(ce, cross_entropy_with_softmax(want, labels))
