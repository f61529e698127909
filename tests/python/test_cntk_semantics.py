# CNTK 2.7's semantics where plain math or another reading of its API would silently give other numbers:
# Function.grad runs in training mode, momentum_schedule's second argument is the epoch size, the
# cross_entropy_with_softmax block's gradients, CNTK's clipped log / sqrt / reciprocal / divide / pow,
# and a training_session that could never end. Each test fails on a ctk that differs from CNTK.
import os
import warnings

import numpy as np
import pytest

import cntk as C


def test_grad_runs_in_training_mode_batch_norm_uses_batch_statistics():
    # With batch statistics, sum_i BN(x)_i = N * bias whatever x is, so d(sum y)/dx = 0. With the running
    # statistics (inference) it would be scale / sqrt(var + eps) = 1 / sqrt(1 + eps).
    x = C.input_variable(3, needs_gradient=True)
    y = C.layers.BatchNormalization()(x)
    data = np.array([[1, 2, 3], [4, 0, -1], [2, 2, 7], [0.5, 1, 1]], np.float32)
    g = y.grad({x: data})
    np.testing.assert_allclose(g, np.zeros_like(data), atol=1e-4)


def test_grad_runs_in_training_mode_dropout_drops():
    x = C.input_variable(1000, needs_gradient=True)
    y = C.dropout(x, 0.5, seed=1)
    g = y.grad({x: np.ones((1, 1000), np.float32)})
    # Dropout scales the kept units by 1 / (1 - rate): the gradient is 0 or 2, about half each.
    assert set(np.unique(g)) <= {0.0, 2.0}
    assert 300 < np.count_nonzero(g) < 700


def test_grad_with_outputs_uses_the_same_training_forward():
    x = C.input_variable(2, needs_gradient=True)
    y = C.layers.BatchNormalization()(x)
    data = np.array([[1, 2], [3, 6]], np.float32)
    g, out = y.grad({x: data}, outputs=[y.output])
    # Normalized with the batch's own mean and variance: +-1 per column (up to epsilon).
    np.testing.assert_allclose(out, [[-1, -1], [1, 1]], atol=1e-3)
    assert g.shape == data.shape


def test_grad_root():
    x = C.input_variable(2, needs_gradient=True)
    h = C.square(x, name='h')
    y = C.reduce_sum(h * 3)
    g = y.grad({x: np.array([[1, 2]], np.float32)}, wrt=[x], grad_root=h.output)
    np.testing.assert_allclose(g, [[2, 4]])


def test_momentum_schedule_second_argument_is_the_epoch_size():
    m = C.momentum_schedule([0.99, 0.9], 1000)
    assert (m[0], m[999], m[1000], m[1001]) == pytest.approx((0.99, 0.99, 0.9, 0.9))
    assert m.minibatch_size == 0  # applied per minibatch, as CNTK's default
    m = C.momentum_schedule(0.9, minibatch_size=32)
    assert m.minibatch_size == 32


def test_schedule_pairs_count_in_the_schedules_unit():
    # CNTK's docstring: without an epoch size the pairs count sweeps, and schedule[n] looks n up in them.
    m = C.momentum_schedule([(999, 0.99), (888, 0.88), (0, 0.77)])
    assert (m[0], m[998], m[999], m[999 + 888 - 1], m[999 + 888]) == pytest.approx(
        (0.99, 0.99, 0.88, 0.88, 0.77))
    s = C.learning_parameter_schedule([(12, 0.1), (15, 0.01), (1, 0.001)], epoch_size=100)
    assert (s[0], s[1199], s[1200], s[2699], s[2700], s[5000]) == pytest.approx(
        (0.1, 0.1, 0.01, 0.01, 0.001, 0.001))
    # A lone number in a pair list counts once.
    s = C.learning_parameter_schedule([0.5, (2, 0.25), 0.125], epoch_size=10)
    assert (s[9], s[10], s[29], s[30]) == pytest.approx((0.5, 0.25, 0.25, 0.125))


def test_momentum_as_time_constant_schedule_takes_lists():
    m = C.momentum_as_time_constant_schedule([1100, 1500], 1000)
    assert m[0] == pytest.approx(np.exp(-1 / 1100))
    assert m[1000] == pytest.approx(np.exp(-1 / 1500))


def test_a_number_with_an_epoch_size_warns_as_cntk():
    with pytest.warns(RuntimeWarning, match='epoch_size is ignored'):
        C.learning_parameter_schedule(0.1, epoch_size=100)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        C.learning_parameter_schedule(0.1)


def test_a_schedule_of_a_string_is_a_value_error():
    with pytest.raises(ValueError, match='float or a list'):
        C.learning_parameter_schedule('0.1')


def test_momentum_schedule_changes_the_training():
    # The same two updates with momentum 0.5 then 0 (epoch size 1 sample) as computed by hand, unit gain:
    # v1 = 0.5 * 0 + 0.5 * g = 0.5; p1 = -0.5; then momentum 0: v2 = g = 1; p2 = -1.5.
    p = C.parameter(init=np.array([0.0], np.float32))
    learner = C.momentum_sgd([p], C.learning_parameter_schedule(1.0), C.momentum_schedule([0.5, 0.0], 1))
    learner.update({p: np.array([1.0], np.float32)}, 1)
    np.testing.assert_allclose(p.value, [-0.5], rtol=1e-6)
    learner.update({p: np.array([1.0], np.float32)}, 1)
    np.testing.assert_allclose(p.value, [-1.5], rtol=1e-6)


def _ce_and_grads(z, t):
    zv = C.input_variable(z.shape[1:], needs_gradient=True)
    tv = C.input_variable(t.shape[1:], needs_gradient=True)
    ce = C.cross_entropy_with_softmax(zv, tv)
    grads, value = ce.grad({zv: z, tv: t}, wrt=[zv, tv], outputs=[ce.output])
    return value, grads[zv], grads[tv]


@pytest.mark.parametrize('t', [[0., 0., 0., 1.], [0., 0., 0.5, 0.5], [0., 0.4, 0.3, 0.3]])
def test_cross_entropy_with_softmax_gradients_as_cntk(t):
    z = np.array([[1., 2., 3., 4.]], np.float32)
    t = np.array([t], np.float32)
    value, gz, gt = _ce_and_grads(z, t)
    softmax = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(value.ravel(), [-(t * np.log(softmax)).sum()], rtol=1e-5)
    np.testing.assert_allclose(gz, softmax - t, atol=1e-6)
    # CNTK's block ReduceLogSum(z) - ReduceSum(t * z): d/dt = -z (not -log_softmax(z)).
    np.testing.assert_allclose(gt, -z, rtol=1e-6)


def test_cross_entropy_with_softmax_of_targets_not_summing_to_one():
    z = np.array([[1., 2., 3.]], np.float32)
    t = np.zeros((1, 3), np.float32)
    value, gz, _ = _ce_and_grads(z, t)
    lse = np.log(np.exp(z).sum())
    np.testing.assert_allclose(value.ravel(), [lse], rtol=1e-6)
    np.testing.assert_allclose(gz, np.exp(z - lse), rtol=1e-5)


def test_numeric_conventions_forward():
    np.testing.assert_allclose(C.log([0., -1., 1e-38, 1.]).eval(), [-85.1, -85.1, -85.1, 0.], rtol=1e-6)
    np.testing.assert_array_equal(C.sqrt([-1., 0., 4.]).eval(), [0., 0., 2.])
    np.testing.assert_array_equal(C.reciprocal([0., 2.]).eval(), [0., 0.5])
    np.testing.assert_array_equal(C.element_divide([1., -3., 6.], [0., 0., 3.]).eval(), [0., 0., 2.])
    pw = C.pow([0., 0., -2., -2., 3.], [-1., 0., 3., 0.5, 2.]).eval()
    np.testing.assert_array_equal(pw[[0, 1, 2, 4]], [0., 1., -8., 9.])
    assert np.isnan(pw[3])


def test_numeric_conventions_in_float64():
    x = C.input_variable(3, dtype=np.float64)
    y = C.log(x) + C.sqrt(x) + C.reciprocal(x)
    # CNTK's constant is the float -85.1f, in double too.
    np.testing.assert_allclose(y.eval({x: np.array([[0., 1., 4.]])}),
                               [[float(np.float32(-85.1)), 2., np.log(4) + 2.25]], rtol=1e-12)


def test_numeric_conventions_backward():
    x = C.input_variable(2, needs_gradient=True)
    # log: g * exp(-log x), finite below 1e-37 where 1 / x is not.
    g = C.log(x).grad({x: np.array([[0., 2.]], np.float32)})
    assert np.isfinite(g).all() and g[0, 0] == pytest.approx(np.exp(85.1), rel=1e-5)
    assert g[0, 1] == pytest.approx(0.5)
    # reciprocal and divide: 0 where the denominator is 0.
    g = C.reciprocal(x).grad({x: np.array([[0., 2.]], np.float32)})
    np.testing.assert_allclose(g, [[0., -0.25]])
    a = C.input_variable(2, needs_gradient=True)
    q = C.element_divide(a, x)
    grads = q.grad({a: np.array([[3., 3.]], np.float32), x: np.array([[0., 2.]], np.float32)}, wrt=[a, x])
    np.testing.assert_allclose(grads[a], [[0., 0.5]])
    np.testing.assert_allclose(grads[x], [[0., -0.75]])
    # pow: d/d exponent is 0 where the base is <= 0.
    e = C.input_variable(2, needs_gradient=True)
    b = C.input_variable(2)
    g = C.pow(b, e).grad({b: np.array([[-2., 2.]], np.float32), e: np.array([[2., 2.]], np.float32)}, wrt=[e])
    np.testing.assert_allclose(g, [[0., 4 * np.log(2)]], rtol=1e-6)


def test_ops_take_numpy_arrays_and_lists_as_operands():
    np.testing.assert_allclose(C.sqrt([0., 4.]).eval(), [0., 2.])
    np.testing.assert_allclose(C.exp(np.array([0., 1.])).eval(), [1., np.e], rtol=1e-6)
    np.testing.assert_allclose(C.negate(3).eval(), -3)
    np.testing.assert_allclose(C.reduce_sum([[1., 2.], [3., 4.]]).eval(), 10)
    assert C.sqrt([0., 4.]).eval().dtype == np.float32
    with pytest.raises(TypeError):
        C.sqrt('abc')


def _infinite_source(tmp_path):
    path = tmp_path / 'data.ctf'
    path.write_text(''.join('|x %d |y 1\n' % i for i in range(4)))
    return C.io.MinibatchSource(C.io.CTFDeserializer(str(path), C.io.StreamDefs(
        x=C.io.StreamDef(field='x', shape=1), y=C.io.StreamDef(field='y', shape=1))))


def _dense_trainer():
    x = C.input_variable(1)
    y = C.input_variable(1)
    z = C.layers.Dense(1)(x)
    loss = C.squared_error(z, y)
    return x, y, z, loss, C.Trainer(z, (loss, loss), [C.sgd(z.parameters, 0.01)])


def test_training_session_that_could_never_end_is_a_value_error(tmp_path):
    source = _infinite_source(tmp_path)
    x, y, z, loss, trainer = _dense_trainer()
    with pytest.raises(ValueError, match='never end'):
        C.training_session(trainer=trainer, mb_source=source, mb_size=2,
                           model_inputs_to_streams={x: source.streams.x, y: source.streams.y})
    # CNTK's words lead the message.
    with pytest.raises(ValueError, match='Train minibatch source must have a limited number of samples'):
        C.training_session(trainer=trainer, mb_source=source, mb_size=2,
                           model_inputs_to_streams={x: source.streams.x, y: source.streams.y})
    # A test or cross-validation source that repeats forever would never end either (this hung).
    streams = {x: source.streams.x, y: source.streams.y}
    with pytest.raises(ValueError, match='Test minibatch source must have a limited number'):
        C.training_session(trainer=trainer, mb_source=source, mb_size=2, max_samples=8,
                           model_inputs_to_streams=streams,
                           test_config=C.TestConfig(_infinite_source(tmp_path), minibatch_size=2))
    with pytest.raises(ValueError, match='Cross validation minibatch source must have a limited number'):
        C.training_session(trainer=trainer, mb_source=source, mb_size=2, max_samples=8,
                           model_inputs_to_streams=streams,
                           cv_config=C.CrossValidationConfig(_infinite_source(tmp_path)))
    # With a sample limit it trains and returns; a cross-validation with a sample limit ends too.
    C.training_session(trainer=trainer, mb_source=source, mb_size=2, max_samples=8,
                       model_inputs_to_streams=streams,
                       cv_config=C.CrossValidationConfig(_infinite_source(tmp_path), max_samples=4)).train()
    assert trainer.total_number_of_samples_seen == 8


def test_times_of_a_static_matrix_and_a_batched_vector():
    # CNTK takes times(M, x): M applied to each sample of x.
    x = C.input_variable(3, needs_gradient=True)
    M = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = C.times(M, x)
    assert y.shape == (2,)
    data = np.array([[1, 2, 3], [0, -1, 4]], np.float32)
    np.testing.assert_allclose(y.eval({x: data}), data @ M.T)
    np.testing.assert_allclose(y.grad({x: data}), np.ones((2, 2)) @ M)
    # A rank-3 static left: [A..., K] with K the sample.
    M3 = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    np.testing.assert_allclose(C.times(M3, x).eval({x: data}), np.einsum('abk,nk->nab', M3, data))


def test_data_layouts_cntk_accepted():
    # [batch, 1, sample] for an input without a sequence axis; one [length, sample] array for a sequence.
    x = C.input_variable(2)
    np.testing.assert_allclose(C.negate(x).eval({x: np.ones((3, 1, 2), np.float32)}), -np.ones((3, 2)))
    s = C.sequence.input_variable(2)
    out = C.sequence.reduce_sum(s).eval({s: np.arange(6, dtype=np.float32).reshape(3, 2)})
    np.testing.assert_allclose(out, [[6., 9.]])


def test_dtype_promotion_as_cntk():
    # Lists are float32; a float64 NumPy array keeps float64 in constants and binary ops (CNTK's
    # get_data_type) but unary ops cast their operand to float32 (CNTK's sanitize_input).
    assert C.constant([[1., 2.]]).dtype == np.float32
    assert C.constant(np.array([1., 2.])).dtype == np.float64
    assert C.times(np.ones((2, 2)), np.ones((2, 2))).eval().dtype == np.float64
    assert C.plus([1.], [2.]).eval().dtype == np.float32
    assert C.sin(np.array([0.5])).eval().dtype == np.float32
    x = C.input_variable(2, dtype=np.float64)
    assert (x + np.ones(2, np.float32)).dtype == np.float64  # a graph operand decides


def test_past_and_future_value_take_a_per_sequence_initial_state():
    # CNTK: an initial state with its own sequence axis gives each sequence its boundary frames: PastValue's
    # first k frames are the initial-state sequence's last k (FutureValue's last k its first k); a
    # one-frame initial state is broadcast. Gradients reach the frames used.
    x = C.sequence.input_variable(2)
    s = C.sequence.input_variable(2, sequence_axis=C.Axis.new_unique_dynamic_axis('s'))
    xs = [np.full((3, 2), 7, np.float32), np.full((1, 2), 9, np.float32)]
    ss = [np.arange(6, dtype=np.float32).reshape(3, 2), np.array([[-1, -2]], np.float32)]
    cases = {(True, 1): [[[4, 5], [7, 7], [7, 7]], [[-1, -2]]],
             (False, 1): [[[7, 7], [7, 7], [0, 1]], [[-1, -2]]],
             (True, 2): [[[2, 3], [4, 5], [7, 7]], [[-1, -2]]],
             (False, 2): [[[7, 7], [0, 1], [2, 3]], [[-1, -2]]]}
    for (past, k), want in cases.items():
        op = C.sequence.past_value if past else C.sequence.future_value
        y = op(x, initial_state=s, time_step=k)
        got = y.eval({x: xs, s: ss})
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, np.array(w, np.float32), err_msg=str((past, k)))
        grads = C.reduce_sum(y).grad({x: xs, s: ss}, wrt=[s])
        used = np.zeros((3, 2), np.float32)
        rows = ([3 - k + dt for dt in range(k)] if past else [k - 1 - dt for dt in range(k)])
        used[rows] = 1
        np.testing.assert_array_equal(grads[0], used, err_msg=str((past, k)))
        np.testing.assert_array_equal(grads[1], [[1, 1]], err_msg=str((past, k)))


def test_a_recurrence_starts_from_the_last_frame_of_another_sequence():
    x = C.sequence.input_variable(2)
    s = C.sequence.input_variable(2, sequence_axis=C.Axis.new_unique_dynamic_axis('s'))
    h = C.placeholder(2, dynamic_axes=x.dynamic_axes)
    step = C.tanh(C.times(x, np.eye(2, dtype=np.float32) * 0.5) + C.sequence.past_value(h, initial_state=s))
    step.replace_placeholders({h: step.output})
    got = step.eval({x: [np.ones((3, 2), np.float32)], s: [np.arange(6, dtype=np.float32).reshape(3, 2)]})[0]
    state, want = np.array([4., 5.]), []
    for _ in range(3):
        state = np.tanh(0.5 + state)
        want.append(state)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_sampling_takes_weights_shaped_one_by_classes():
    # CNTK's word_rnn example samples from weights reshaped to (1, C): the classes are the last axis.
    w = C.constant(np.array([[0., 1., 2., 0.]], np.float32))
    s = C.random_sample(w, 3, True, seed=1)
    assert s.shape == (3, 4)
    rows = s.eval()
    assert rows.shape == (3, 4) and (rows.sum(axis=1) == 1).all() and rows[:, [0, 3]].sum() == 0
    f = C.random_sample_inclusion_frequency(w, 2, False, seed=1)
    assert f.shape == (1, 4)
    with pytest.raises(ValueError, match='vector'):
        C.random_sample(C.constant(np.ones((2, 4), np.float32)), 3, True)


def test_cntk_dtype_names_and_deprecated_sequence_input():
    # CNTK: dtype='float' is float32 ('double' float64), integer types float32; cntk.sequence.input is
    # the deprecated name of sequence.input_variable; `from cntk.layers import *` leaves `sequence` the
    # op module (CNTK's layers/sequence.py re-exported it).
    from cntk.internal import sanitize_dtype_cntk
    assert C.input_variable(2, dtype='float').dtype == np.float32
    assert C.parameter((2,), dtype='double').dtype == np.float64
    assert sanitize_dtype_cntk('float') == np.float32 and sanitize_dtype_cntk(np.int32) == np.float32
    x = C.sequence.input(3, dtype='float')
    assert x.shape == (3,) and len(x.dynamic_axes) == 2
    scope = {}
    exec('from cntk.layers import *', scope)
    assert scope['sequence'].input_variable is C.sequence.input_variable
    from cntk.layers.sequence import Recurrence  # the layers stay importable
    assert callable(Recurrence)


@pytest.mark.parametrize('shape, axis', [((1, 1, 1), -3), ((2, 1, 3), 1), ((1, 2, 1), None), ((1, 2, 1, 3), (0, 2))])
def test_squeeze_of_a_placeholder_waits_for_its_shape(shape, axis):
    # CNTK's layer functions apply ops to placeholders whose shapes come later.
    p = C.placeholder()
    y = C.squeeze(p, axis).replace_placeholders({p: C.input_variable(shape, needs_gradient=True)})
    data = np.arange(np.prod(shape), dtype=np.float32).reshape((1,) + shape)
    assert y.shape == np.squeeze(data[0], axis).shape
    np.testing.assert_array_equal(y.eval({y.arguments[0]: data})[0], np.squeeze(data[0], axis))
    assert y.grad({y.arguments[0]: data}).shape == data.shape


@pytest.mark.parametrize('axis', [-3, -2, -1, 0, 2])
def test_expand_dims_of_a_placeholder_waits_for_its_shape(axis):
    p = C.placeholder()
    y = C.expand_dims(p, axis).replace_placeholders({p: C.input_variable((2, 3))})
    data = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    np.testing.assert_array_equal(y.eval({y.arguments[0]: data})[0], np.expand_dims(data[0], axis))


def test_squeeze_of_a_placeholder_checks_the_axis_once_bound():
    p = C.placeholder()
    y = C.squeeze(p, 0)
    with pytest.raises(ValueError, match='not 1'):
        y.replace_placeholders({p: C.input_variable((2, 3))})


def test_eval_ignores_values_for_inputs_the_graph_does_not_read():
    x1, x2 = C.input_variable(1, name='x1'), C.input_variable(1, name='x2')
    y = x1 + 1
    keep = y + x2  # noqa: F841 (x2 belongs to a larger network)
    np.testing.assert_allclose(y.eval({x1: np.array([[1.]], np.float32), x2: np.array([[5.]], np.float32)}),
                               [[2.]])


def test_function_members_by_name_naming_and_clone_by_method_name():
    # CNTK's Function.__getattr__: parameters and named nodes (inside a block such as a Sequential),
    # arguments by name, then the single output's members; a name may be set once; clone takes a
    # CloneMethod or its name.
    x = C.input_variable(2, name='x')
    model = C.layers.Sequential([C.layers.Dense(3, name='first'), C.layers.Dense(1, name='second')])(x)
    assert model.first.W.shape == (2, 3) and model.second.b.shape == (1,)
    assert model.x.name == 'x' and model.shape == (1,)
    with pytest.raises(AttributeError):
        model.no_such_member
    y = C.plus(x, 1)
    y.name = 'y'
    assert y.name == 'y'
    with pytest.raises(ValueError, match='only once'):
        y.name = 'z'
    frozen = model.clone('freeze')
    assert frozen.parameters == [] and len(frozen.constants) == 4
    with pytest.raises(ValueError, match="'copy'"):
        model.clone('copy')


def test_helpers_cntks_tests_import():
    import _cntk_py
    from cntk.internal.utils import _ones_like
    from cntk.logging import ProgressWriter
    assert issubclass(_cntk_py.ProgressWriter, ProgressWriter)  # with CNTK's C++ constructor arguments
    C.debugging.force_deterministic_algorithms(True)
    try:
        assert _cntk_py.should_force_deterministic_algorithms()
    finally:
        C.debugging.force_deterministic_algorithms(False)
    ones = _ones_like([np.zeros((2, 3)), np.zeros((1, 3))], 'float')
    assert [o.shape for o in ones] == [(2, 3), (1, 3)] and ones[0].dtype == np.float32 and ones[1].sum() == 3


def test_cross_entropy_of_constant_logits_against_batched_labels():
    # CNTK's own loss tests score a constant against a batched label input: the logits broadcast.
    z = np.array([[1., 2., 3., 4.]])
    t = np.array([[[0., 0., 0., 1.]], [[0., 1., 0., 0.]]])
    labels = C.input_variable((1, 4), dtype=np.float64, needs_gradient=True)
    ce = C.cross_entropy_with_softmax(C.constant(z), labels)
    lse = np.log(np.exp(z).sum())
    np.testing.assert_allclose(ce.eval({labels: t}).ravel(), [lse - 4, lse - 2])
    np.testing.assert_allclose(ce.grad({labels: t}), np.broadcast_to(-z, t.shape))


@pytest.mark.parametrize('m_shape, x_shape', [((3, 2), (2, 2)), ((2, 2, 2), (2, 2, 2)), ((2, 2), (2, 1))])
def test_times_of_a_constant_and_batched_matrices(m_shape, x_shape):
    # CNTK: times(M, x) contracts x's first rank(x) - output_rank axes with M's last ones, per sample.
    m = np.arange(np.prod(m_shape), dtype=np.float64).reshape(m_shape)
    data = np.arange(2 * np.prod(x_shape), dtype=np.float64).reshape((2,) + x_shape)
    x = C.input_variable(x_shape, dtype=np.float64, needs_gradient=True)
    y = C.times(C.constant(m), x)
    k = len(x_shape) - 1
    np.testing.assert_allclose(y.eval({x: data}), [np.tensordot(m, d, axes=k) for d in data])
    want_grad = np.tensordot(m, np.ones(y.shape), axes=(list(range(m.ndim - k)), list(range(m.ndim - k))))
    np.testing.assert_allclose(y.grad({x: data}), np.broadcast_to(want_grad.reshape(x_shape), data.shape))


def test_batch_normalization_without_running_count_warns_as_cntk():
    x = C.input_variable((3,))
    p = [C.constant(np.ones(3, np.float32)) for _ in range(4)]
    with pytest.warns(Warning, match="running_count"):
        C.batch_normalization(x, p[0], p[1], p[2], p[3], spatial=False)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        C.batch_normalization(x, p[0], p[1], p[2], p[3], spatial=False, running_count=C.constant(0))


def test_axis_objects_stand_for_their_index_in_axis_arguments():
    x = C.input_variable((2, 3, 4))
    assert C.reshape(x, (6,), begin_axis=C.Axis(0), end_axis=C.Axis(2)).shape == (6, 4)
    assert C.reshape(x, (12,), begin_axis=C.Axis(1)).shape == (2, 12)
    with pytest.raises(TypeError, match='static axis'):
        C.reshape(x, (24,), begin_axis=C.Axis.default_batch_axis())


def test_a_pooling_window_with_a_channel_extent_pools_across_channels():
    # CNTK's window covers every axis of the sample: (2, 2, 1) on [C, H, W] averages channel pairs too.
    data = np.arange(1, 49, dtype=np.float32).reshape(1, 2, 2, 4, 3)
    a = C.sequence.input_variable((2, 4, 3), needs_gradient=True)
    avg = C.pooling(a, C.AVG_POOLING, (2, 2, 1), (2, 2, 1), auto_padding=[False])
    assert avg.shape == (1, 2, 3)
    np.testing.assert_allclose(avg.eval({a: data})[0], [[[[8.5, 9.5, 10.5], [14.5, 15.5, 16.5]]],
                                                        [[[32.5, 33.5, 34.5], [38.5, 39.5, 40.5]]]])
    np.testing.assert_allclose(avg.grad({a: data})[0], np.full(data.shape[1:], 0.25))
    mx = C.pooling(a, C.MAX_POOLING, (2, 2, 1), (2, 2, 1), auto_padding=[False])
    np.testing.assert_allclose(mx.eval({a: data})[0][:, 0, 0], [[16., 17., 18.], [40., 41., 42.]])


def test_past_value_window_as_cntk_documents_it():
    from cntk.layers import PastValueWindow
    x = C.sequence.input_variable(2)
    x0 = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    value, valid = PastValueWindow(4, axis=-2)(x).outputs
    got = C.combine([value, valid]).eval({x: x0})
    np.testing.assert_array_equal(got[value], [[[4, 5], [2, 3], [0, 1], [0, 0]]])
    np.testing.assert_array_equal(got[valid], [[[1], [1], [1], [0]]])
    back, back_valid = PastValueWindow(2, axis=-2, go_backwards=True)(x).outputs
    np.testing.assert_array_equal(C.combine([back]).eval({x: x0}), [[[0, 1], [2, 3]]])


def test_testing_an_empty_minibatch_gives_nan_as_cntk():
    x = C.input_variable(2)
    t = C.input_variable(2)
    z = C.times(x, C.parameter((2, 2), init=1.0))
    trainer = C.Trainer(z, (C.squared_error(z, t), C.squared_error(z, t)), [C.sgd(z.parameters, 0.1)])
    assert np.isnan(trainer.test_minibatch({}))


def test_fmeasure_is_one_minus_the_f_score_per_sample():
    rng = np.random.RandomState(3)
    out = (rng.rand(2, 1, 4, 4) > 0.5).astype(np.float32)
    tgt = (rng.rand(2, 1, 4, 4) > 0.5).astype(np.float32)
    x, t = C.input_variable((1, 4, 4)), C.input_variable((1, 4, 4))
    for beta in (1, 2):
        got = C.fmeasure(x, t, beta=beta).eval({x: out, t: tgt})
        hits = (out * tgt).sum(axis=(2, 3))
        p, r = hits / out.sum(axis=(2, 3)), hits / tgt.sum(axis=(2, 3))
        want = 1 - (1 + beta ** 2) * p * r / (beta ** 2 * p + r)
        np.testing.assert_allclose(got.reshape(2, 1), want, rtol=1e-5)
    v = C.input_variable(3)
    assert C.fmeasure(v, v).shape == ()  # other ranks: the whole sample


def test_learner_checkpoint_restores_its_state():
    w = C.parameter((2,), init=1.0)
    learner = C.momentum_sgd([w], C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))
    grads = {w: np.array([1., 2.], np.float32)}
    learner.update(grads, 1)
    checkpoint, saved = learner.create_checkpoint(), w.value.copy()
    learner.update(grads, 1)
    expected = w.value.copy()
    learner.update(grads, 1)  # the momentum moves on
    learner.restore_from_checkpoint(checkpoint)
    w.value = saved  # the parameters are the model's, not the learner's checkpoint
    learner.update(grads, 1)
    np.testing.assert_allclose(w.value, expected)


def test_gathers_by_one_condition_share_their_sequence_axis():
    # CNTK names Where's axis after the condition: a + b of two gathers by it is well formed.
    a = C.sequence.input_variable(1, name='a')
    b = C.sequence.input_variable(1, name='b')
    last = C.sequence.is_last(a)
    z = C.sequence.gather(a, last) + C.sequence.gather(b, last)
    out = z.eval({a: [np.array([[5.], [1.]], np.float32)], b: [np.array([[7.], [2.]], np.float32)]})
    np.testing.assert_array_equal(out[0], [[3.]])
    # Gathers by other conditions do not share it.
    with pytest.raises(ValueError, match="dynamic axes"):
        C.sequence.gather(a, last) + C.sequence.gather(b, C.sequence.is_last(b))


def test_gather_with_derived_axis_typeinfo():
    a = C.sequence.input_variable(1, name='a')
    b = C.sequence.input_variable(1, name='b')
    # (0, 1): one frame per sequence, so no sequence axis at all: a batch.
    a_last = C.sequence.gather(a, C.sequence.is_last(a), new_sequence_axis_typeinfo=(0, 1))
    b_last = C.sequence.gather(b, C.sequence.is_last(b), new_sequence_axis_typeinfo=(0, 1))
    assert len(a_last.dynamic_axes) == 1
    z = a_last + b_last
    out = z.eval({a: [np.array([[5.], [1.]], np.float32)], b: [np.array([[7.], [2.]], np.float32)]})
    np.testing.assert_array_equal(np.asarray(out).reshape(-1), [3.])
    # Other factors: an axis named from the source axis and the factors, shared by ops deriving it alike.
    ga = C.sequence.gather(a, C.sequence.is_first(a) + 1, new_sequence_axis_typeinfo=(1, 0))
    assert ga.dynamic_axes == a.dynamic_axes
    g2 = C.sequence.gather(a, C.sequence.is_first(a) + 1, new_sequence_axis_typeinfo=(2, 1))
    assert g2.dynamic_axes[1].name.endswith('_times_2_plus_1')
    with pytest.raises(ValueError, match="no frames"):
        C.sequence.gather(a, C.sequence.is_last(a), new_sequence_axis_typeinfo=(0, 0))


def test_classification_error_gradient_is_cntks():
    # CNTK's error was 1 - sum(t * hardmax(z)): d/dt = -hardmax(z) per sample, d/dz = 0.
    z = C.input_variable(4, needs_gradient=True)
    t = C.input_variable(4, needs_gradient=True)
    err = C.classification_error(z, t)
    zs = np.array([[1, 2, 3, 4], [1, 5, 3, 4]], np.float32)
    ts = np.array([[1, 0, 0, 0], [0, 1, 0, 0]], np.float32)
    g = err.grad({z: zs, t: ts}, wrt=[z, t])
    np.testing.assert_array_equal(g[t], [[0, 0, 0, -1], [0, -1, 0, 0]])
    np.testing.assert_array_equal(g[z], np.zeros_like(zs))
    # Along another axis the error is the mean over the slices (CNTK compared argmaxes: no gradient).
    z2 = C.input_variable((2, 3), needs_gradient=True)
    t2 = C.input_variable((2, 3))
    e2 = C.classification_error(z2, t2, axis=0)
    zs2 = np.array([[[1, 5, 0], [2, 4, 1]]], np.float32)
    ts2 = np.array([[[1, 1, 0], [0, 0, 1]]], np.float32)  # column 0 wrong, 1 and 2 right
    np.testing.assert_allclose(np.asarray(e2.eval({z2: zs2, t2: ts2})).reshape(-1), [1 / 3], rtol=1e-6)
    np.testing.assert_array_equal(e2.grad({z2: zs2, t2: ts2}, wrt=[z2]), np.zeros_like(zs2))
    # The last axis given as a positive number is CNTK's composite form too: no gradient.
    t3 = C.input_variable(4, needs_gradient=True)
    g3 = C.classification_error(z, t3, axis=0).grad({z: zs, t3: ts}, wrt=[t3])
    np.testing.assert_array_equal(g3, np.zeros_like(ts))


def test_pad_gradients_count_the_mirrored_copies():
    # The patterns of CNTK's own pad test: a mirrored cell's gradient goes back to the cell it copied.
    x = C.parameter(init=np.arange(6, dtype=np.float32).reshape((2, 3)))
    g = C.pad(x, mode=C.ops.SYMMETRIC_PAD, pattern=[(1, 0), (2, 1)]).grad({}, [x])
    np.testing.assert_array_equal(g, [[4, 4, 4], [2, 2, 2]])
    g = C.pad(x, mode=C.ops.REFLECT_PAD, pattern=[(1, 1), (2, 2)]).grad({}, [x])
    np.testing.assert_array_equal(g, [[4, 6, 4], [4, 6, 4]])


def test_random_seeds_follow_cntks_rules():
    def value(seed=None):
        return C.parameter(shape=(10,), init=C.glorot_uniform(seed=seed)).value

    def dropout_seed(seed=None):
        f = C.dropout(C.input_variable(2), 0.5, seed=seed) if seed else C.dropout(C.input_variable(2), 0.5)
        return f.root_function.attributes['rngSeed']
    try:
        # reset_random_seed(s): the draws count up from s, and restart there when reset again.
        C.cntk_py.reset_random_seed(2)
        a, b = value(), value()
        assert not np.allclose(a, b)
        C.cntk_py.reset_random_seed(2)
        np.testing.assert_array_equal(value(), a)
        C.cntk_py.reset_random_seed(789)
        assert dropout_seed() == 789 and dropout_seed() == 790
        # set_fixed_random_seed(s): every draw is s; an explicit seed still wins.
        C.cntk_py.set_fixed_random_seed(789)
        np.testing.assert_array_equal(value(), value())
        assert dropout_seed() == 789 and dropout_seed() == 789 and dropout_seed(123) == 123
        assert not np.allclose(value(123), value(456))
        C.cntk_py.set_fixed_random_seed(987)
        c = value()
        C.cntk_py.set_fixed_random_seed(789)
        assert not np.allclose(c, value())
    finally:
        C.cntk_py.reset_random_seed(0)


def test_set_attribute_changes_dropout_rate_and_seed():
    x = C.input_variable((100, 100))
    d = C.dropout(x, dropout_rate=0.1, seed=5)
    ones = np.ones((1, 100, 100), np.float32)

    def kept():  # the fraction of elements kept by a training-mode forward
        _, out = d.forward({x: ones}, [d.output], set([d.output]))
        return np.count_nonzero(out[d.output]) / ones.size
    for rate in [0.0, 0.25, 0.78]:
        d.set_attribute('dropoutRate', rate)
        assert d.root_function.attributes['dropoutRate'] == rate
        assert abs(kept() - (1 - rate)) < 0.02
    d.set_attribute('rngSeed', 7)
    first = kept()
    d.set_attribute('rngSeed', 7)  # the same seed: the stream restarts
    assert kept() == first
    with pytest.raises(ValueError, match="dropoutRate"):
        d.set_attribute('dropoutRate', 1.5)
    with pytest.raises(ValueError, match="cannot be changed"):
        d.set_attribute('axis', 1)
    with pytest.raises(ValueError, match="only dropout"):
        C.relu(x).set_attribute('dropoutRate', 0.5)


def test_delay_whose_initial_state_becomes_a_sequence_later():
    # A placeholder initial state bound afterwards to a sequence over another axis: each sequence starts
    # from its state sequence's last frame (past) or first frame (future), as when built with it known.
    state_axis = C.Axis('stateAxis')
    x = C.sequence.input_variable(2, name='x')
    s = C.sequence.input_variable(2, sequence_axis=state_axis, name='s')
    xs = [np.array([[1, 2], [3, 4], [5, 6]], np.float32), np.array([[7, 8]], np.float32)]
    ss = [np.array([[10, 20], [30, 40]], np.float32), np.array([[50, 60], [70, 80], [90, 99]], np.float32)]
    for past, pick in [(True, C.sequence.last), (False, C.sequence.first)]:
        p = C.placeholder()
        delayed = (C.sequence.past_value if past else C.sequence.future_value)(x, p)
        late = delayed.replace_placeholders({p: s})
        known = (C.sequence.past_value if past else C.sequence.future_value)(x, s)
        explicit = (C.sequence.past_value if past else C.sequence.future_value)(x, pick(s))
        for f in (late, known):
            out = f.eval({x: xs, s: ss})
            ref = explicit.eval({x: xs, s: ss})
            for a, b in zip(out, ref):
                np.testing.assert_array_equal(a, b)
        # The state's gradient lands on the frame it was taken from.
        sg = C.sequence.input_variable(2, sequence_axis=state_axis, needs_gradient=True)
        p2 = C.placeholder()
        f = (C.sequence.past_value if past else C.sequence.future_value)(x, p2).replace_placeholders({p2: sg})
        g = f.grad({x: xs, sg: ss}, wrt=[sg])
        frame = -1 if past else 0
        for seq_grad, seq in zip(g, ss):
            expected = np.zeros_like(seq)
            expected[frame] = 1
            np.testing.assert_array_equal(seq_grad, expected)


def test_learnable_values_given_as_integers_are_float32():
    # CNTK had no integer parameters: integer arrays and lists become float32 (NumPy floats keep theirs).
    assert C.parameter(init=np.array([1, 2])).dtype == np.float32
    assert C.parameter(init=[[1, 2]]).dtype == np.float32
    assert C.parameter(init=np.array([1., 2.])).dtype == np.float64
    assert C.parameter(init=np.array([1, 2]), dtype=np.float64).dtype == np.float64
    y = C.input_variable(2)
    e = C.layers.Embedding(weights=[[1, 3, 2], [3, 4, 1]])
    np.testing.assert_array_equal(e(y).eval({y: np.array([[-1., 1.]], np.float32)}), [[2., 1., -1.]])
    # A shape beside the weights must be theirs (CNTK's ValueError otherwise).
    assert C.layers.Embedding(3, weights=[[1, 3, 2], [3, 4, 1]])(y).shape == (3,)
    with pytest.raises(ValueError, match='does not match weights'):
        C.layers.Embedding(3, weights=[1., 2., 3.])


def test_times_with_an_input_of_inferred_dims_checks_them_with_data():
    a = C.input_variable((2, 2))
    b = C.input_variable((C.InferredDimension, 2))
    z = C.times(a, b)
    av = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    bv = np.arange(8, dtype=np.float32).reshape(2, 2, 2) - 3
    np.testing.assert_allclose(z.eval({a: av, b: bv}), np.matmul(av, bv))
    with pytest.raises(ValueError, match="inner dims"):
        z.eval({a: av, b: np.ones((2, 3, 2), np.float32)})


def test_sequence_slice_of_one_frame_is_a_batch():
    a = C.sequence.input_variable(3, needs_gradient=True)
    data = [np.array([[1, 2, 3], [-4, 5, 6], [7, 8, 9]], np.float32), np.array([[0, 1, 0], [2, 2, 2]], np.float32)]
    one = C.sequence.slice(a, 1, 2)
    assert len(one.dynamic_axes) == 1
    np.testing.assert_array_equal(one.eval({a: data}), [[-4, 5, 6], [2, 2, 2]])
    last = C.sequence.slice(a, -1, 0)
    np.testing.assert_array_equal(last.eval({a: data}), [[7, 8, 9], [2, 2, 2]])
    g = one.grad({a: data}, wrt=[a])
    np.testing.assert_array_equal(g[0], [[0, 0, 0], [1, 1, 1], [0, 0, 0]])
    # Longer slices stay sequences.
    assert len(C.sequence.slice(a, 0, 2).dynamic_axes) == 2


def test_backward_takes_the_one_outputs_gradient_as_data():
    param = C.parameter(init=np.arange(8, dtype=np.float32).reshape(4, 2))
    r = C.reshape(param, (8, 1))
    state, result = r.forward({}, [r.output], [r.output])
    np.testing.assert_array_equal(result[r.output], np.arange(8).reshape(8, 1))
    grad = r.backward(state, np.arange(8, dtype=np.float32).reshape(8, 1), [param])
    np.testing.assert_array_equal(grad[param], np.arange(8).reshape(4, 2))


def test_one_hot_over_samples_of_several_rows():
    # Value.one_hot with a shape (2, 6): each sequence's indices, two at a time, are its [2 x 6] samples.
    idx = [[1, 3, 4, 2, 0, 5], [2, 4]]
    v = C.Value.one_hot(idx, (2, 6))
    a = C.sequence.input_variable((2, 6), is_sparse=True)
    w = C.parameter(init=np.arange(36, dtype=np.float32).reshape(6, 6))
    out = C.times(a, w).eval({a: v})
    W = np.arange(36, dtype=np.float32).reshape(6, 6)
    np.testing.assert_array_equal(out[0], W[idx[0]].reshape(3, 2, 6))
    np.testing.assert_array_equal(out[1], W[idx[1]].reshape(1, 2, 6))
    # Without a sequence axis: sequences of one sample each are the batch.
    b = C.input_variable((2, 6), is_sparse=True)
    np.testing.assert_array_equal(C.times(b, w).eval({b: C.Value.one_hot([[1, 3], [0, 5]], (2, 6))}),
                                  [W[[1, 3]], W[[0, 5]]])
    with pytest.raises(ValueError, match="multiple"):
        C.Value.one_hot([[1, 3, 4]], (2, 6))
    c3 = C.sequence.input_variable((3, 6), is_sparse=True)
    with pytest.raises(ValueError, match=r"sample shape \[2, 6\]"):
        C.times(c3, w).eval({c3: v})


def test_training_session_keeps_checkpoints_under_cntks_names(tmp_path):
    source = _infinite_source(tmp_path)
    x, y, z, loss, trainer = _dense_trainer()
    name = str(tmp_path / 'ckp' / 'run')
    streams = {x: source.streams.x, y: source.streams.y}
    calls = []
    C.training_session(trainer=trainer, mb_source=source, mb_size=4, max_samples=60,
                       model_inputs_to_streams=streams,
                       checkpoint_config=C.CheckpointConfig(name, frequency=35, preserve_all=True),
                       cv_config=C.CrossValidationConfig(frequency=20, callback=lambda *a: calls.append(a))).train()
    # One periodic checkpoint at 36 samples (run0), one for the samples after it at the end (run1), and the
    # final one under the name itself, as CNTK wrote them; a cross-validation without a source is its
    # callback alone.
    assert sorted(os.listdir(tmp_path / 'ckp')) == ['run', 'run.ckp', 'run0', 'run0.ckp', 'run1', 'run1.ckp']
    assert calls == [(0, 0.0, 0, 0), (1, 0.0, 0, 0), (2, 0.0, 0, 0)]
    # Without the file itself a new session restores the newest kept one (run1: all 60 samples).
    os.remove(name)
    os.remove(name + '.ckp')
    trainer2 = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, 0.01)])
    C.training_session(trainer=trainer2, mb_source=_infinite_source(tmp_path), mb_size=4, max_samples=60,
                       model_inputs_to_streams=streams,
                       checkpoint_config=C.CheckpointConfig(name, frequency=35, preserve_all=True)).train()
    assert trainer2.total_number_of_samples_seen == 60


def test_parameter_set_value_takes_an_ndarrayview_or_an_array():
    # What CNTK's UserLearner.update calls on each parameter.
    p = C.parameter((2, 2), init=0)
    p.set_value(C.NDArrayView.from_dense(np.ones((2, 2), np.float64)))
    np.testing.assert_array_equal(p.value, np.ones((2, 2)))
    assert p.value.dtype == np.float32
    p.set_value(np.full((2, 2), 3, np.float32))
    np.testing.assert_array_equal(p.value, np.full((2, 2), 3))
    with pytest.raises(ValueError, match='does not match'):
        p.set_value(np.zeros(3, np.float32))


def test_cntk_py_device_kinds():
    assert C.cpu().type() == C.cntk_py.DeviceKind_CPU
    assert C.cntk_py.DeviceKind_GPU == C.device.DeviceKind.GPU != C.cntk_py.DeviceKind_CPU


def test_value_of_an_ndarrayview_given_first():
    # CNTK's SWIG constructor Value(NDArrayView).
    nd = C.NDArrayView.from_dense(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(C.Value(nd).asarray(), np.arange(6).reshape(2, 3))
