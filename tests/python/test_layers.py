# The layers library from Python: shapes after inference, default_options, Python activations,
# Sequential/For, and parameter values as NumPy arrays.
import numpy as np
import pytest

import cntk as C
from cntk.layers import *  # noqa: F401,F403


def test_dense_shapes_and_values():
    x = C.input_variable(5)
    z = Dense(3, activation=C.relu)(x)
    assert z.shape == (3,)
    assert z.W.shape == (5, 3) and z.b.shape == (3,)
    assert isinstance(z.W.value, np.ndarray)
    np.testing.assert_allclose(z.b.value, 0)
    data = np.ones((2, 5), np.float32)
    np.testing.assert_allclose(z.eval({x: data}), np.maximum(data @ z.W.value, 0), rtol=1e-5)


def test_python_activation_and_identity():
    x = C.input_variable(2)
    calls = []

    def act(v):
        calls.append(v)
        return C.tanh(v)

    z = Dense(2, activation=act, init=C.glorot_uniform())(x)
    assert calls, 'the Python activation was called while the layer was applied'
    assert z.shape == (2,)
    lin = Dense(2, activation=None)(x)
    data = np.ones((1, 2), np.float32)
    np.testing.assert_allclose(lin.eval({x: data}), data @ lin.W.value, rtol=1e-5)


def test_dense_map_rank_maps_the_leading_axes():
    x = C.input_variable((3, 2, 5))
    z = Dense(7, map_rank=1, activation=None)(x)
    assert z.shape == (3, 7) and z.W.shape == (2, 5, 7)
    data = np.random.default_rng(0).standard_normal((1, 3, 2, 5)).astype(np.float32)
    expected = data.reshape(1, 3, 10) @ z.W.value.reshape(10, 7) + z.b.value
    np.testing.assert_allclose(z.eval({x: data}), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="input_rank and map_rank"):
        Dense(7, input_rank=1, map_rank=1)


def test_sequential_for_and_default_options():
    x = C.input_variable((1, 12, 12))
    with default_options(activation=C.relu, pad=True):
        model = Sequential([For(range(2), lambda i: Convolution2D((3, 3), 4)), MaxPooling((2, 2), (2, 2)),
                            Dense(10, activation=None)])
    z = model(x)
    assert z.shape == (10,)
    assert len(z.parameters) == 6


def test_convnet_shapes():
    x = C.input_variable((1, 28, 28))
    with default_options(activation=C.relu, pad=False):
        c1 = Convolution2D((5, 5), 32, pad=True)(x)
        p1 = MaxPooling((3, 3), (2, 2))(c1)
        c2 = Convolution2D((3, 3), 48)(p1)
    assert c1.shape == (32, 28, 28) and p1.shape == (32, 13, 13) and c2.shape == (48, 11, 11)


def test_dropout_batchnorm_layernorm_embedding():
    x = C.input_variable(4)
    assert Dropout(0.5)(x).shape == (4,)
    assert BatchNormalization()(x).shape == (4,)
    assert LayerNormalization()(x).shape == (4,)
    assert Embedding(3)(x).shape == (3,)
    data = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(Dropout(0.5)(x).eval({x: data}), data)  # inference: no drops
    np.testing.assert_allclose(identity(x).eval({x: data}), data)


def test_recurrent_layers(rng):
    x = C.sequence.input_variable(3)
    lstm = C.layers.Recurrence(C.layers.LSTM(4))(x)
    gru = C.layers.Fold(C.layers.GRU(2), go_backwards=True)(x)
    rnn = C.layers.Recurrence(C.layers.RNNStep(5, activation=C.tanh))(x)
    seqs = [rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)]
    out = lstm.eval({x: seqs})
    assert [o.shape for o in out] == [(4, 4), (2, 4)]
    assert gru.eval({x: seqs}).shape == (2, 2)
    assert [o.shape for o in rnn.eval({x: seqs})] == [(4, 5), (2, 5)]
    # A Python step function (CNTK's Function(lambda)): an exponential moving average.
    ema = C.layers.Recurrence(lambda h, v: 0.5 * h + 0.5 * v)(x)
    got = ema.eval({x: [seqs[0]]})[0]
    want, h = [], np.zeros(3, np.float32)
    for v in seqs[0]:
        h = 0.5 * h + 0.5 * v
        want.append(h)
    np.testing.assert_allclose(got, np.array(want), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError):
        C.layers.LSTM((4, 2))


def test_recurrence_from_starts_each_sequence_from_its_own_state(rng):
    x = C.sequence.input_variable(3)
    h0 = C.input_variable(3)  # per sequence, e.g. an encoder's last state
    ema = C.layers.RecurrenceFrom(lambda h, v: 0.5 * h + 0.5 * v)(h0, x)
    seqs = [rng.standard_normal((3, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)]
    starts = rng.standard_normal((2, 3)).astype(np.float32)
    got = ema.eval({x: seqs, h0: starts})
    for s, seq in enumerate(seqs):
        h, want = starts[s], []
        for v in seq:
            h = 0.5 * h + 0.5 * v
            want.append(h)
        np.testing.assert_allclose(got[s], np.array(want), rtol=1e-6, atol=1e-6)
    # An LSTM decoder from (h, c): two states, given in the step's order.
    c0 = C.input_variable(4)
    hh = C.input_variable(4)
    lstm = C.layers.LSTM(4)
    dec = C.layers.RecurrenceFrom(lstm)(hh, c0, x)
    zeros = np.zeros((2, 4), np.float32)
    got = dec.eval({x: seqs, hh: zeros, c0: zeros})
    assert [o.shape for o in got] == [(3, 4), (2, 4)]
    plain = C.layers.Recurrence(lstm)(x).eval({x: seqs})  # the same LSTM from zero states
    for a, b in zip(got, plain):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError):  # a state of the wrong size
        dec.eval({x: seqs, hh: np.zeros((2, 5), np.float32), c0: zeros})


def test_convolution_transpose_and_max_unpooling(rng):
    x = C.input_variable((2, 5, 5))
    up = C.layers.ConvolutionTranspose2D((3, 3), 4, strides=2, pad=False)(x)
    assert up.shape == (4, 11, 11)
    data = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    assert up.eval({x: data}).shape == (1, 4, 11, 11)
    y = C.input_variable((1, 4, 4))
    pooled = C.layers.MaxPooling((2, 2), strides=2)(y)
    unpooled = C.layers.MaxUnpooling((2, 2), strides=2)(pooled, y)
    img = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    out = unpooled.eval({y: img})[0, 0]
    # Each window's maximum (its bottom-right element here) keeps its value; the rest is 0.
    want = np.zeros((4, 4), np.float32)
    for i in (1, 3):
        for j in (1, 3):
            want[i, j] = img[0, 0, i, j]
    np.testing.assert_array_equal(out, want)
    with pytest.raises(ValueError):
        C.layers.ConvolutionTranspose2D((3,), 4)


def test_unfold_from():
    # f(s), f(f(s)), ...: one item per frame of the argument (times length_increase); a generator may
    # return (output, next state); until_predicate marks the last item.
    x = C.sequence.input_variable(1)
    data = [np.zeros((4, 1), np.float32), np.zeros((2, 1), np.float32)]
    out = C.layers.UnfoldFrom(lambda s: s * 2, initial_state=1.0)(x).eval({x: data})
    np.testing.assert_array_equal(out[0], [2, 4, 8, 16])
    np.testing.assert_array_equal(out[1], [2, 4])
    out = C.layers.UnfoldFrom(lambda s: (s * 10, s + 1), initial_state=1.0, length_increase=2)(x).eval({x: data})
    np.testing.assert_array_equal(out[1], [10, 20, 30, 40])
    out = C.layers.UnfoldFrom(lambda s: s + 1, until_predicate=lambda o: C.greater_equal(o, 3),
                              initial_state=0.0)(x).eval({x: data})
    np.testing.assert_array_equal(out[0], [1, 2, 3])
    np.testing.assert_array_equal(out[1], [1, 2])
    # A greedy decoder: the next word is the hardmax of a dense map of the previous one.
    w = np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32)
    start = np.eye(4, dtype=np.float32)[0]
    decoder = C.layers.UnfoldFrom(lambda word: C.hardmax(C.times(word, C.constant(w))), initial_state=start)
    words = decoder(x).eval({x: data})[0]
    want, cur = [], start
    for _ in range(4):
        cur = np.eye(4, dtype=np.float32)[np.argmax(cur @ w)]
        want.append(cur)
    np.testing.assert_array_equal(words, want)


def test_default_options_use_peepholes():
    # CNTK's default_options(use_peepholes=True) gives LSTMs their peephole weights (GRU has none).
    x = C.sequence.input_variable(2)
    plain = len(C.layers.Recurrence(C.layers.LSTM(3))(x).parameters)
    with C.layers.default_options(use_peepholes=True):
        peepholed = C.layers.Recurrence(C.layers.LSTM(3))(x)
        gru = C.layers.Recurrence(C.layers.GRU(3))(x)
    assert len(peepholed.parameters) == plain + 3
    assert len(gru.parameters) == len(C.layers.Recurrence(C.layers.GRU(3))(x).parameters)


def test_default_options_go_backwards_and_initial_state():
    # Recurrence and Fold take go_backwards and initial_state from default_options when not given.
    x = C.sequence.input_variable(1)
    seq = [np.array([[1], [2], [3]], np.float32)]
    add = lambda h, v: h + v  # noqa: E731
    with C.layers.default_options(go_backwards=True, initial_state=10):
        backwards = C.layers.Recurrence(add)(x).eval({x: seq})[0]
        forwards = C.layers.Recurrence(add, go_backwards=False)(x).eval({x: seq})[0]
        first = C.layers.Fold(add)(x).eval({x: seq})
    np.testing.assert_array_equal(backwards.ravel(), [16, 15, 13])
    np.testing.assert_array_equal(forwards.ravel(), [11, 13, 16])
    np.testing.assert_array_equal(np.ravel(first), [16])
    np.testing.assert_array_equal(C.layers.Recurrence(add)(x).eval({x: seq})[0].ravel(), [1, 3, 6])


def test_default_options_reach_pooling_and_normalization():
    # CNTK's default_override_or arguments: pooling's pad, BatchNormalization's map_rank and epsilon,
    # LayerNormalization's epsilon.
    x = C.input_variable((2, 5, 5))
    assert MaxPooling((2, 2), (2, 2))(x).shape == (2, 2, 2)
    with default_options(pad=True):
        assert MaxPooling((2, 2), (2, 2))(x).shape == (2, 3, 3)
        assert MaxPooling((2, 2), (2, 2), pad=False)(x).shape == (2, 2, 2)  # given beats default
    with default_options(map_rank=1, epsilon=0.5, normalization_time_constant=100, use_cntk_engine=True):
        bn = BatchNormalization()(x)
        ln = LayerNormalization()
    assert [p.shape for p in bn.parameters] == [(2,), (2,)]  # spatial: one scale and bias per channel
    assert [p.shape for p in BatchNormalization()(x).parameters] == [(2, 5, 5), (2, 5, 5)]
    v = C.input_variable(2)
    data = np.array([[1.0, -1.0]], np.float32)  # mean 0, std 1: y = x / (1 + epsilon)
    np.testing.assert_allclose(ln(v).eval({v: data}), data / 1.5, rtol=1e-6)
    np.testing.assert_allclose(LayerNormalization()(v).eval({v: data}), data / (1 + 1e-5), rtol=1e-6)
    # disable_regularization (here through default_options): the learners leave scale and bias alone.
    with default_options(disable_regularization=True):
        unregularized = BatchNormalization(map_rank=1)
    w = C.parameter((2,), init=1.0)
    learner = C.sgd(list(unregularized.parameters) + [w], C.learning_parameter_schedule(0.5),
                    l2_regularization_weight=0.1)
    unregularized(x)  # infers the shapes
    grads = {p: np.zeros(p.shape, np.float32) for p in list(unregularized.parameters) + [w]}
    before = {p.uid: p.value.copy() for p in unregularized.parameters}
    learner.update(grads, 1)
    for p in unregularized.parameters:
        np.testing.assert_array_equal(p.value, before[p.uid])
    assert (w.value < 1.0).all()


def test_default_options_dtype_float32_is_the_default():
    # CNTK's TrainResNet_ImageNet_Distributed.py wraps its model in default_options(dtype=np.float32).
    x = C.input_variable(3)
    with C.default_options(dtype=np.float32):
        z = C.layers.Dense(2)(x)
    assert z.output.dtype == np.float32
    with pytest.raises(NotImplementedError, match="mixed_precision='f16'"):
        C.default_options(dtype=np.float16)


def test_sequential_of_no_layers_is_the_identity():
    # CNTK's Sequence2Sequence with num_layers=1 builds For(range(0), ...): an empty Sequential.
    x = C.input_variable(3)
    y = C.layers.Sequential([C.layers.For(range(0), lambda: C.layers.Dense(2)), C.layers.Dense(2)])(x)
    assert y.shape == (2,)
    np.testing.assert_array_equal(C.layers.Sequential([])(x).eval({x: np.array([[1, 2, 3]], np.float32)}),
                                  [[1, 2, 3]])
