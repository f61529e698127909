# CNTK 2.7 documented its ops, sequence ops, losses, learners and layers with examples and their
# results. These tests state the same cases and results (written for ctk, not copied): each fails if
# ctk computes something other than what CNTK documented. Examples whose results depend on random
# initialization are left out (Dense, Convolution, Embedding, LSTM/GRU/RNNStep weights, Dropout, nce_loss).
import numpy as np
import pytest

import cntk as C


def close(got, want):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-5)


# ---- element-wise and reductions ----

@pytest.mark.parametrize('op, a, b, want', [
    (C.less, [41., 42., 43.], [42., 42., 42.], [1., 0., 0.]),
    (C.equal, [41., 42., 43.], [42., 42., 42.], [0., 1., 0.]),
    (C.greater, [41., 42., 43.], [42., 42., 42.], [0., 0., 1.]),
    (C.greater_equal, [41., 42., 43.], [42., 42., 42.], [0., 1., 1.]),
    (C.less_equal, [41., 42., 43.], [42., 42., 42.], [1., 1., 0.]),
    (C.not_equal, [41., 42., 43.], [42., 42., 42.], [1., 0., 1.]),
    (C.less, [-1, 0, 1], [0], [1., 0., 0.]),
    (C.element_divide, [1., 1., 1., 1.], [0.5, 0.25, 0.125, 0.], [2., 4., 8., 0.]),
    (C.element_times, [1., 1., 1., 1.], [0.5, 0.25, 0.125, 0.], [0.5, 0.25, 0.125, 0.]),
    (C.minus, [1., 2., 3., 4.], [2., 3., 4., 5.], [-1., -1., -1., -1.]),
    (C.plus, [1., 2., 3., 4.], [2., 3., 4., 5.], [3., 5., 7., 9.]),
    (C.element_max, [1., 1., 5., 5.], [1., 2., 4., 5.], [1., 2., 5., 5.]),
    (C.element_min, [1., 1., 5., 5.], [1., 2., 4., 5.], [1., 1., 4., 5.]),
    (C.pow, [1., 2., -2.], [3., -2., 3.], [1., 0.25, -8.]),
])
def test_binary_ops(op, a, b, want):
    close(op(a, b).eval(), want)


@pytest.mark.parametrize('op, x, want', [
    (C.abs, [-1, 1, -2, 3], [1, 1, 2, 3]),
    (C.negate, [-1, 1, -2, 3], [1, -1, 2, -3]),
    (C.exp, [0., 1.], [1., 2.718282]),
    (C.log, [1., 2.], [0., 0.693147]),
    (C.sqrt, [0., 4.], [0., 2.]),
    (C.square, [1., 10.], [1., 100.]),
    (C.reciprocal, [-1 / 3, 1 / 5, -2, 3], [-3., 5., -0.5, 0.333333]),
    (C.floor, [0.2, 1.3, 4., 5.5, 0.0], [0., 1., 4., 5., 0.]),
    (C.ceil, [0.2, 1.3, 4., 5.5, 0.0], [1., 2., 4., 6., 0.]),
    (C.round, [0.2, 1.3, 4., 5.5, 0.0, -0.5], [0., 1., 4., 6., 0., 0.]),
    (C.relu, [[-1, -0.5, 0, 1, 2]], [[0., 0., 0., 1., 2.]]),
    (C.sigmoid, [-2, -1., 0., 1., 2.], [0.119203, 0.268941, 0.5, 0.731059, 0.880797]),
    (C.tanh, [[1, 2], [3, 4]], [[0.761594, 0.964028], [0.995055, 0.999329]]),
    (C.softplus, [[-1, -0.5, 0, 1, 2]], [[0.313262, 0.474077, 0.693147, 1.313262, 2.126928]]),
    (C.softsign, [[-1, -0.5, 0, 1, 2]], [[-0.5, -0.333333, 0., 0.5, 0.666667]]),
    (C.elu, [[-1, -0.5, 0, 1, 2]], [[-0.632121, -0.393469, 0., 1., 2.]]),
    (C.leaky_relu, [[-1, -0.5, 0, 1, 2]], [[-0.01, -0.005, 0., 1., 2.]]),
    (C.sin, [np.pi / 2], [1.]),
    (C.cos, [np.pi], [-1.]),
])
def test_unary_ops(op, x, want):
    close(op(x).eval(), want)


def test_softplus_steepness_and_clip_with_tensor_bounds():
    close(C.softplus([[-1, -0.5, 0, 1, 2]], steepness=4).eval(),
          [[0.004537, 0.031732, 0.173287, 1.004537, 2.000084]])
    close(C.clip([1., 2.1, 3.0, 4.1], 2., 4.).eval(), [2., 2.1, 3., 4.])
    close(C.clip([-10., -5., 0., 5., 10.], [-5., -4., 0., 3., 5.], [5., 4., 1., 4., 9.]).eval(),
          [-5., -4., 0., 4., 9.])


def test_n_ary_sum_and_mean_take_a_list():
    a = C.input_variable(4)
    b = C.input_variable(4)
    data = {a: np.array([[1., 2., 3., 4.]], np.float32), b: np.array([[0., 5., -3., 2.]], np.float32)}
    close(C.sum([a, b]).eval(data), [[1., 7., 0., 6.]])
    close(C.mean([a, b]).eval(data), [[0.5, 3.5, 0., 3.]])


def test_reductions():
    data = np.array([[[5, 1], [20, 30]], [[40, 1], [55, 60]]], np.float32)
    x = C.input_variable((2, 2))
    close(C.reduce_sum(x, 0).eval({x: data}), [[[25, 31]], [[95, 61]]])
    close(C.reduce_max(x, 1).eval({x: data}), [[[5], [30]], [[40], [60]]])
    close(C.reduce_mean(x, 0).eval({x: data}), [[[12.5, 15.5]], [[47.5, 30.5]]])
    close(C.reduce_min(x, 0).eval({x: data}), [[[5, 1]], [[40, 1]]])
    close(C.reduce_prod(x, 0).eval({x: data}), [[[100, 30]], [[2200, 60]]])


def test_times_and_transpose():
    close(C.times([[1, 2], [3, 4]], [[5], [6]]).eval(), [[17.], [39.]])
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    close(C.transpose(a, perm=(1, 2, 0)).eval(), a.transpose(1, 2, 0))
    close(C.swapaxes([[[0, 1], [2, 3], [4, 5]]], 1, 2).eval(), [[[0, 2, 4], [1, 3, 5]]])


# ---- convolution and pooling ----

def test_convolution_and_its_transpose():
    img = np.arange(25.0, dtype=np.float32).reshape(1, 5, 5)
    x = C.input_variable(img.shape)
    kernel = C.constant(np.array([2, -1, -1, 2], np.float32).reshape(1, 2, 2))
    close(C.convolution(kernel, x, auto_padding=[False]).eval({x: [img]}),
          [[[[6, 8, 10, 12], [16, 18, 20, 22], [26, 28, 30, 32], [36, 38, 40, 42]]]])
    img3 = np.arange(9.0, dtype=np.float32).reshape(1, 3, 3)
    x3 = C.input_variable(img3.shape)
    close(C.convolution_transpose(kernel, x3, auto_padding=[False]).eval({x3: [img3]}),
          [[[[0, 2, 3, -2], [6, 4, 6, -1], [9, 10, 12, 2], [-6, 5, 6, 16]]]])


def test_pooling_and_unpooling():
    img = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
    x = C.input_variable(img.shape)
    close(C.pooling(x, C.AVG_POOLING, (2, 2), (2, 2)).eval({x: [img]}), [[[[2.5, 4.5], [10.5, 12.5]]]])
    y = C.pooling(x, C.MAX_POOLING, (2, 2), (2, 2))
    close(y.eval({x: [img]}), [[[[5, 7], [13, 15]]]])
    close(C.unpooling(y, x, C.MAX_UNPOOLING, (2, 2), (2, 2)).eval({x: [img]}),
          [[[[0, 0, 0, 0], [0, 5, 0, 7], [0, 0, 0, 0], [0, 13, 0, 15]]]])


def test_pooling_layers_shapes():
    h = C.input_variable((32, 240, 320))
    assert C.layers.MaxPooling((3, 3), strides=2)(h).shape == (32, 119, 159)
    assert C.layers.AveragePooling((3, 3), strides=2)(h).shape == (32, 119, 159)
    f = C.layers.GlobalMaxPooling()
    f.update_signature((1, 4, 4))
    close(f(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)), [[[[15.]]]])
    g = C.layers.GlobalAveragePooling()
    g.update_signature((1, 4, 4))
    close(g(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)), [[[[7.5]]]])


# ---- sequences ----

def _seq():
    return np.arange(24, dtype=np.float32).reshape(1, 4, 3, 2)


def test_past_and_future_value():
    x = C.sequence.input_variable((3, 2))
    x0 = _seq()
    close(C.sequence.past_value(x).eval({x: x0})[0], np.concatenate([np.zeros((1, 3, 2)), x0[0, :3]]))
    close(C.sequence.future_value(x).eval({x: x0})[0], np.concatenate([x0[0, 1:], np.zeros((1, 3, 2))]))
    s = C.input_variable((3, 2))
    s0 = np.arange(6, dtype=np.float32).reshape(1, 3, 2) / 2
    close(C.sequence.past_value(x, initial_state=s).eval({x: x0, s: s0})[0],
          np.concatenate([s0, x0[0, :3]]))


def test_first_last_and_flags():
    x = C.sequence.input_variable((3, 2))
    x0 = _seq()
    close(C.sequence.is_first(x).eval({x: x0})[0], [1, 0, 0, 0])
    close(C.sequence.is_last(x).eval({x: x0})[0], [0, 0, 0, 1])
    close(C.sequence.first(x).eval({x: x0}), [[[0, 1], [2, 3], [4, 5]]])
    close(C.sequence.last(x).eval({x: x0}), [[[18, 19], [20, 21], [22, 23]]])


def test_where_and_gather():
    x = C.sequence.input_variable((3, 2))
    x0 = _seq()
    z = C.greater(C.reduce_sum(x), 60)
    close(z.eval({x: x0})[0], [0, 0, 1, 1])
    close(C.sequence.where(z).eval({x: x0})[0], [2, 3])
    counts = C.sequence.input_variable(1)
    close(C.sequence.where(counts).eval([[[1], [2], [1], [3], [2]]])[0], [0, 1, 1, 2, 3, 3, 3, 4, 4])
    close(C.sequence.where(counts).eval([[[1.2]] * 10])[0], [0, 0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9])
    y = C.sequence.gather(x, z)
    close(y.eval({x: x0})[0], x0[0, 2:])


# ---- losses and metrics ----

def test_losses_and_metrics():
    close(C.cross_entropy_with_softmax([[1., 1., 1., 50.]], [[0., 0., 0., 1.]]).eval(), [[0.]])
    close(C.cross_entropy_with_softmax([[1., 2., 3., 4.]], [[0.35, 0.15, 0.05, 0.45]]).eval(), [[1.84019]])
    close(C.squared_error([[4., 6.]], [[2., 1.]]).eval(), [[29.]])
    close(C.squared_error([[1., 2.]], [[1., 2.]]).eval(), [[0.]])
    close(C.classification_error([[1., 2., 3., 4.]], [[0., 0., 0., 1.]]).eval(), [[0.]])
    close(C.classification_error([[1., 2., 3., 4.]], [[0., 0., 1., 0.]]).eval(), [[1.]])
    close(C.classification_error([[1., 2., 3., 4.]], [[0., 0., 1., 0.]], topN=3).eval(), [[0.]])
    close(C.cosine_distance([[1., 0.]], [[1., 0.]]).eval(), [[1.]])
    close(C.cosine_distance([[1., 0.]], [[0., 1.]]).eval(), [[0.]])


# ---- learners ----

def test_documented_schedules():
    s = C.learners.training_parameter_schedule(0.01)
    assert (s[0], s[1]) == pytest.approx((0.01, 0.01))
    s = C.learners.training_parameter_schedule([0.01, 0.001], epoch_size=1000)
    assert (s[0], s[1], s[1000], s[1001]) == pytest.approx((0.01, 0.01, 0.001, 0.001))
    s = C.learners.training_parameter_schedule([(12, 0.1), (15, 0.01), (1, 0.001)], epoch_size=100)
    assert (s[0], s[1199], s[1200], s[2699], s[2700], s[5000]) == pytest.approx(
        (0.1, 0.1, 0.01, 0.01, 0.001, 0.001))
    m = C.momentum_as_time_constant_schedule(1100)
    assert m[0] == pytest.approx(np.exp(-1 / 1100))
    s = C.train.minibatch_size_schedule([32, 64], 1000)
    assert (s[0], s[1], s[1000], s[1001]) == pytest.approx((32, 32, 64, 64))


# ---- layers (the parts that do not depend on random weights) ----

def test_layers_with_known_values():
    d = C.layers.Dense(5, init=1, init_bias=0.5)
    d.update_signature(3)
    close(d(np.ones((1, 3), np.float32)), [[3.5] * 5])
    a = C.layers.Activation(C.relu)
    a.update_signature(2)
    close(a(np.array([[-1., 2.]], np.float32)), [[0., 2.]])
    ident = C.layers.identity
    x = C.input_variable(2)
    close(ident(x).eval({x: [[1., 2.]]}), [[1., 2.]])
    seq = C.layers.Sequential([C.layers.Dense(2, init=1, bias=False), C.relu])
    seq.update_signature(2)
    close(seq(np.array([[-1., -2.]], np.float32)), [[0., 0.]])


def test_recurrence_of_plus_is_a_running_sum():
    x = C.sequence.input_variable(1)
    r = C.layers.Recurrence(C.plus)(x)
    close(r.eval([np.array([[1.], [2.], [3.]], np.float32)])[0], [[1.], [3.], [6.]])
    f = C.layers.Fold(C.plus)(x)
    close(f.eval([np.array([[1.], [2.], [3.]], np.float32)]), [[6.]])


def test_sequential_with_a_fork_makes_trigrams():
    # CNTK's Delay example: a tuple in Sequential applies each layer to the same input; splice joins them.
    from cntk.layers.typing import Tensor, Sequence
    x = C.input_variable(**Sequence[Tensor[2]])
    x0 = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    trigram = C.layers.Sequential([tuple(C.layers.Delay(T) for T in (-1, 0, 1)), C.splice])
    close(trigram(x)(x0)[0], [[2, 3, 0, 1, 0, 0], [4, 5, 2, 3, 0, 1], [0, 0, 4, 5, 2, 3]])


def test_forward_declaration_closes_a_loop_that_counts_frames():
    # CNTK's ForwardDeclaration example: a placeholder resolved afterwards to the value that reads it
    # through past_value, so each frame holds its position and the last frame the sequence's length.
    from cntk.layers.typing import Tensor, Sequence
    x = C.input_variable(**Sequence[Tensor[2]])
    state = C.layers.ForwardDeclaration()
    count = C.sequence.past_value(state, initial_state=0) + C.sequence.broadcast_as(1, x)
    state.resolve_to(count)
    x0 = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    close(count(x0)[0], [1., 2., 3.])
    close(C.sequence.last(count)(x0), [3.])
    assert not count.placeholders


def test_scatter_places_a_per_sequence_value_at_the_first_frame():
    # CNTK's scatter example: sequence.last(x) has no sequence axis; it is scattered as one frame per
    # sequence to where is_first holds, zeros elsewhere.
    x = C.sequence.input_variable(shape=(3, 2))
    y = C.sequence.scatter(C.sequence.last(x), C.sequence.is_first(x))
    x0 = np.arange(24.0, dtype=np.float32).reshape(1, 4, 3, 2)
    want = np.zeros((4, 3, 2), np.float32)
    want[0] = x0[0, 3]
    close(y.eval({x: x0})[0], want)


def test_random_sample_inclusion_frequency_with_and_without_duplicates():
    # CNTK's example: 100 classes of weight 1000 and 100 of weight 1, 150 samples.
    w = np.concatenate((np.full(100, 1000.), np.full(100, 1.)))
    f = C.random_sample_inclusion_frequency(w, 150, True).eval()
    close([f[0], f[1], f[110]], [1.4985015, 1.4985015, 0.0014985015])
    f = C.random_sample_inclusion_frequency(w, 150, False).eval()
    close(f[0], 1.0)  # without duplicates the heavy classes are each taken once


def test_slice_with_strides_and_negative_indices():
    # CNTK's slice examples: a stride per axis, and an end counted from the end.
    data = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    close(C.slice(data, [0, 1], [0, 0], [2, 3], [1, 2]).eval(), [[1, 3], [4, 6]])
    close(C.slice(data, 1, 0, -1).eval(), [[1, 2], [4, 5]])
    close(C.slice(data, 0, 1, 2).eval(), [[4, 5, 6]])
