"""Writes small CNTK v1 (cntk.exe / BrainScript) model files in CNTK's tag layout, for tests: UTF-16LE
NUL-terminated markers and names, little-endian scalars, each node as (precision, operation, name, payload),
then the relation (each node's inputs by name) and the root groups. Payloads are given as bytes, built
with the helpers below in the order CNTK's node Save() wrote its fields."""
import struct

import numpy as np


def wstr(s):
    return s.encode('utf-16-le') + b'\x00\x00'


def u64(v):
    return struct.pack('<Q', v & 0xFFFFFFFFFFFFFFFF)


def i32(v):
    return struct.pack('<i', v)


def u32(v):
    return struct.pack('<I', v)


def f32(v):
    return struct.pack('<f', v)


def shape(col_major_dims):
    """CNTK's TensorShape: uint32 rank, then uint32 dims (column-major: the reverse of NumPy's order)."""
    return u32(len(col_major_dims)) + b''.join(u32(d) for d in col_major_dims)


def parameter(value, learning_rate_multiplier=1.0, dtype=np.float32):
    """A LearnableParameter payload for a NumPy array (row-major; stored column-major) whose values are
    written as `dtype` (float32, or float16 for a node tagged 'half', float64 for 'double')."""
    value = np.asarray(value, dtype)
    col = list(reversed(value.shape)) or [1]
    rows = col[0]
    cols = int(np.prod(col[1:])) if len(col) > 1 else 1
    return (f32(learning_rate_multiplier) + shape(col) + b'd' + wstr('BMAT') + u64(value.itemsize) +
            wstr('unnamed') + i32(0) + u64(rows) + u64(cols) + np.ascontiguousarray(value).tobytes() + wstr('EMAT'))


def input_value(sample_shape, version, sequence=True):
    """An InputValue payload: rows, cols, the sample shape, the dynamic axis (version 8+), and the
    learning-rate multiplier (version 10+)."""
    col = list(reversed(sample_shape))
    out = u64(int(np.prod(col))) + u64(0) + shape(col)
    if version >= 8:
        out += u32(1) + wstr('*' if sequence else '__noSequenceAxis')
    if version >= 10:
        out += f32(0.0)
    return out


def f64(v):
    return struct.pack('<d', v)


def network(nodes, version=20, features=(), outputs=(), criteria=()):
    """The file's bytes. nodes: [(op, name, payload bytes, [input names])], in any order. A node's precision
    tag is 'float' unless its op is given as 'tag:op' (e.g. 'double,float:Cast')."""
    b = wstr('BCN') + wstr('BVersion') + u64(version) + wstr('EVersion') + u64(len(nodes)) + wstr('BNodeList')
    for op, name, payload, _ in nodes:
        tag, op = op.split(':') if ':' in op else ('float', op)
        b += wstr(tag) + wstr(op) + wstr(name) + payload
    b += wstr('ENodeList') + wstr('BRelation')
    for _, name, _, inputs in nodes:
        b += wstr(name) + u64(len(inputs)) + b''.join(wstr(i) for i in inputs)
    b += wstr('ERelation') + wstr('BRootNodes')
    b += wstr('BFeatureNodes') + u64(len(features)) + b''.join(wstr(n) for n in features) + wstr('EFeatureNodes')
    b += wstr('BLabelNodes') + u64(0) + wstr('ELabelNodes')
    b += wstr('BCriterionNodes') + u64(len(criteria)) + b''.join(wstr(n) for n in criteria) + wstr('ECriterionNodes')
    b += wstr('BEvalNodes') + u64(0) + wstr('EEvalNodes')
    b += wstr('BOutputNodes') + u64(len(outputs)) + b''.join(wstr(n) for n in outputs) + wstr('EOutputNodes')
    b += wstr('ERootNodes') + wstr('ECN')
    return b
