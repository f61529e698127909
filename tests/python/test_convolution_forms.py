# Convolution forms CNTK had beyond the plain one: SequentialConvolution (and Convolution(sequential=True)),
# num_filters=None, free channel dims. SequentialConvolution runs a convolution whose
# first filter axis runs along the sequence axis, checked against a NumPy reference per sequence: zeros past
# each sequence's end, CNTK's auto padding at its start, ceil(T / stride) frames with pad and
# floor((T - k) / stride) + 1 without.
import numpy as np
import pytest

import cntk as C
from cntk.layers import SequentialConvolution
from cntk.layers.typing import Sequence, Tensor


def reference(seq, W, pad, strides):
    """seq [T, C, s...] (channels given), W [F, C, kt, ks...] -> [T', F, s'...]."""
    k = W.shape[2:]
    lo = [(kk - 1) // 2 if pad else 0 for kk in k]  # CNTK's auto padding puts the odd cell at the end
    x = np.moveaxis(seq, 0, 1)  # [C, T, s...]
    size = x.shape[1:]
    if pad:
        out_size = [-(-n // st) for n, st in zip(size, strides)]
    else:
        out_size = [(n - kk) // st + 1 for n, kk, st in zip(size, k, strides)]
    out = np.zeros((W.shape[0],) + tuple(out_size))
    for f in range(W.shape[0]):
        for pos in np.ndindex(*out_size):
            acc = 0.0
            for off in np.ndindex(*k):
                src = [p * st - l + o for p, st, l, o in zip(pos, strides, lo, off)]
                if all(0 <= s < n for s, n in zip(src, size)):
                    acc += np.dot(W[(f, slice(None)) + off], x[(slice(None),) + tuple(src)])
            out[(f,) + pos] = acc
    return np.moveaxis(out, 0, 1)  # [T', F, s'...]


@pytest.mark.parametrize('filter_shape, sample, num_filters, pad, strides', [
    ((3,), (1,), 1, False, (1,)),
    ((3,), (2,), 4, True, (1,)),
    ((2,), (1,), 1, True, (2,)),
    ((3, 2), (1, 5), 1, False, (1, 1)),
    ((3, 2), (2, 5), 3, True, (1, 1)),
    ((3, 2), (1, 5), 4, True, (2, 2)),
])
def test_values_match_a_per_sequence_reference(filter_shape, sample, num_filters, pad, strides):
    rng = np.random.default_rng(0)
    layer = SequentialConvolution(filter_shape, num_filters=num_filters, pad=pad, strides=strides, bias=False)
    x = C.sequence.input_variable(sample)
    z = layer(x)
    seqs = [rng.standard_normal((n,) + sample).astype(np.float32) for n in (5, 3, 7)]
    out = z.eval({x: seqs})
    W = layer.W.value
    for seq, got in zip(seqs, out):
        np.testing.assert_allclose(got, reference(seq, W, pad, strides), rtol=1e-5, atol=1e-5)
    # Stride 1 with padding keeps every length: the output stays on x's sequence axis.
    same_axis = pad and strides[0] == 1
    assert (z.dynamic_axes == x.dynamic_axes) == same_axis


def test_without_reduction_rank_and_filters_it_is_cntks_plain_sequence_filter():
    # CNTK's own example: a filter [4, 2, 1] over a sequence of scalars, no padding.
    c = SequentialConvolution(3, init=np.array([4., 2., 1.], np.float32), pad=False, reduction_rank=0, bias=False)
    c.update_signature(Sequence[Tensor[()]])
    out = c([np.array([2., 6., 4., 8., 6.], np.float32)])
    np.testing.assert_array_equal(out, [[24., 40., 38.]])
    # (3, 1): the filter also covers the sample's one axis; the output keeps it.
    c = SequentialConvolution((3, 1), init=np.array([4., 2., 1.], np.float32).reshape(3, 1), pad=False,
                              reduction_rank=0, bias=False)
    c.update_signature(Sequence[Tensor[1]])
    out = c([np.array([[2.], [6], [4.], [8.], [6.]], np.float32)])
    np.testing.assert_array_equal(out, [[[24.], [40.], [38.]]])
    # Convolution(sequential=True) is the same layer.
    c = C.layers.Convolution(3, init=np.array([4., 2., 1.], np.float32), sequential=True, pad=False,
                             reduction_rank=0, bias=False)
    c.update_signature(Sequence[Tensor[()]])
    np.testing.assert_array_equal(c([np.array([2., 6., 4., 8., 6.], np.float32)]), [[24., 40., 38.]])


def test_bias_per_filter_and_cntks_array_bias():
    x = C.sequence.input_variable(1)
    layer = SequentialConvolution(2, num_filters=3, pad=True, init_bias=np.array([1, 2, 3], np.float32))
    z = layer(x)
    seq = np.arange(5, dtype=np.float32).reshape(5, 1)
    out = z.eval({x: [seq]})[0]
    ref = reference(seq, layer.W.value, True, (1,)) + np.array([1, 2, 3])
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    # With spatial axes CNTK's array bias keeps its own shape and aligns with the last one (kept as CNTK).
    x2 = C.sequence.input_variable((1, 5))
    layer2 = SequentialConvolution((3, 2), num_filters=4, pad=False, init_bias=np.array([1, 2, 3, 4], np.float32))
    out2 = layer2(x2).eval({x2: [np.ones((3, 1, 5), np.float32)]})[0]
    W = layer2.W.value
    for f in range(4):
        np.testing.assert_allclose(out2[0][f], [W[f].sum() + j + 1 for j in range(4)], rtol=1e-5)


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    x = C.sequence.input_variable((2, 4), needs_gradient=True)
    layer = SequentialConvolution((2, 3), num_filters=2, pad=True, strides=(2, 1))
    z = C.sequence.reduce_sum(C.reduce_sum(C.square(layer(x))))
    seqs = [rng.standard_normal((n, 2, 4)).astype(np.float64) for n in (3, 4)]
    grads = z.grad({x: seqs}, wrt=[layer.W, x])
    W = layer.W
    base = W.value.copy()
    numeric = np.zeros_like(base)
    eps = 1e-2
    for idx in np.ndindex(*base.shape):
        for sign in (1, -1):
            w = base.copy()
            w[idx] += sign * eps
            W.value = w
            numeric[idx] += sign * np.sum(z.eval({x: seqs})) / (2 * eps)
    W.value = base
    np.testing.assert_allclose(grads[W], numeric, rtol=2e-2, atol=2e-2)
    # The input's gradient: one frame of one sequence perturbed.
    g0 = grads[x][0]
    s = [q.copy() for q in seqs]
    s[0][1, 0, 2] += eps
    up = np.sum(z.eval({x: s}))
    s[0][1, 0, 2] -= 2 * eps
    down = np.sum(z.eval({x: s}))
    np.testing.assert_allclose(g0[1, 0, 2], (up - down) / (2 * eps), rtol=2e-2, atol=2e-2)


def test_convolution_without_num_filters_has_no_filter_axis():
    # CNTK's Convolution1D over a static axis with num_filters=None and no reduction axis.
    c = C.layers.Convolution1D(3, init=np.array([4, 2, 1], np.float32), pad=True, reduction_rank=0, bias=False)
    c.update_signature(5)
    out = c([np.array([[2, 6, 4, 8, 6]], np.float32)])
    np.testing.assert_array_equal(out, [[10, 24, 40, 38, 44]])
    assert C.layers.Convolution2D((3, 3))(C.input_variable((2, 8, 8))).shape == (6, 6)


def test_free_channel_dim_takes_the_kernels_and_is_checked_with_data():
    # CNTK's free static axes: [-3 x -3 x -3] convolved with a one-channel kernel.
    x = C.input_variable((C.FreeDimension,) * 3)
    w = C.constant(np.array([[[[1, 2], [3, 4]]]], np.float32))  # [1, 1, 2, 2]
    y = C.convolution(w, x, auto_padding=[False])
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    out = y.eval({x: data})
    np.testing.assert_allclose(out[0, 0, 0, 0], 0 * 1 + 1 * 2 + 4 * 3 + 5 * 4)
    assert out.shape == (1, 1, 3, 3)
    with pytest.raises(ValueError, match="channels"):
        y.eval({x: np.zeros((1, 2, 4, 4), np.float32)})
