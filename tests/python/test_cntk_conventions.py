# CNTK 2.7's conventions that its own unit tests check (bindings/python/cntk/**/tests), restated as ctk's
# tests: edge values of gradients, argument forms CNTK accepted, and the shapes it returned.
import numpy as np
import pytest

import cntk as C
from cntk import Axis


def test_activation_gradients_at_zero_take_the_positive_side():
    x = C.input_variable(2, needs_gradient=True)
    d = np.array([[0., -0.1]], np.float32)
    alpha = C.constant(np.full(2, 0.5, np.float32))
    for f, want in [(C.leaky_relu(x), [1.0, 0.01]), (C.param_relu(alpha, x), [1.0, 0.5]),
                    (C.selu(x), [1.0507009873554805, 1.0507009873554805 * 1.6732632423543772 * np.exp(-0.1)])]:
        np.testing.assert_allclose(f.grad({x: d}, [x]).ravel(), want, rtol=1e-5)


@pytest.mark.parametrize('low, high', [(5.0, 0.5), (C.constant([5.0]), C.constant([0.5]))])
def test_clip_with_a_minimum_above_the_maximum_gives_the_maximum(low, high):
    x = C.input_variable(5, needs_gradient=True)
    f = C.clip(x, low, high)
    d = np.array([[1.5, 2.1, 0.9, -1.0, 7.0]], np.float32)
    np.testing.assert_array_equal(f.eval({x: d}), np.clip(d, 5.0, 0.5))  # NumPy: the maximum applied last
    np.testing.assert_array_equal(f.grad({x: d}, [x]), np.zeros_like(d))


def test_times_transpose_with_a_matrix_per_sample():
    b = C.input_variable((2, 2))
    a = C.constant(np.array([[1.5, 2.1]], np.float32))
    f = C.times_transpose(a, b)
    assert f.shape == (1, 2)
    rows = np.array([[[10., 20.], [1., -1.]]], np.float32)
    np.testing.assert_allclose(f.eval({b: rows}), [[[57., -0.6]]], rtol=1e-6)
    x = C.input_variable((1, 2))
    np.testing.assert_allclose(C.times_transpose(x, b).eval({x: [[[1., 2.]]], b: rows}), [[[50., -1.]]])


def test_new_leading_axis_in_splice_and_reshape():
    one, two = np.array([1.], np.float32), np.array([2.], np.float32)
    np.testing.assert_array_equal(C.splice(one, two, axis=Axis.new_leading_axis()).eval(), [[1.], [2.]])
    x = C.input_variable((2, 3))
    assert C.reshape(x, (3, 2), 0, Axis.new_leading_axis()).shape == (3, 2)
    assert C.reshape(x, (1, 1), Axis.new_leading_axis(), Axis.new_leading_axis()).shape == (2, 3, 1, 1)
    assert Axis.default_input_variable_dynamic_axes() == (Axis.default_batch_axis(), Axis.default_dynamic_axis())


def test_as_block_returns_a_composite_with_the_block_at_its_root():
    p = C.placeholder()
    a = C.input_variable((2, 3), name='a')
    inner = C.element_times(C.reshape(p, (3, 2)), np.ones((3, 2), np.float32), name='inside')
    blk = C.as_block(inner, [(p, a)], 'reshape_op', block_instance_name='reshape_op')
    assert blk.is_composite
    root = blk.root_function.find_by_name('reshape_op')
    assert root.is_block and root.is_primitive and not root.is_composite
    assert root.block_root.find_by_name('inside').is_primitive
    mapping = root.block_arguments_mapping
    assert len(mapping) == 1 and mapping[0][1].name == 'a'
    np.testing.assert_array_equal(blk.eval({a: np.arange(6, dtype=np.float32).reshape(1, 2, 3)}),
                                  np.arange(6).reshape(1, 3, 2))


def test_classification_error_of_matrix_samples():
    o, t = C.input_variable((3, 4)), C.input_variable((3, 4))
    out = np.array([[[1., 2., 3., 4.], [6., 2., 7., 4.], [1., 5., 3., 4.]]], np.float32)
    tgt = np.array([[[0., 1., 0., 0.], [0., 0., 1., 0.], [0., 1., 0., 0.]]], np.float32)
    # A named axis: each row's error, averaged over the sample (rows 1 and 2 right, row 0 wrong).
    np.testing.assert_allclose(np.ravel(C.classification_error(o, t, axis=1).eval({o: out, t: tgt})), [1 / 3.])
    # The default: the sample as one vector (CNTK's node takes the argmax of the whole column): right
    # only where the target's one 1 is the output's largest value (7, row 1), whatever the rows say.
    one_hot = np.zeros((2, 3, 4), np.float32)
    one_hot[0, 0, 1] = one_hot[1, 1, 2] = 1
    got = C.classification_error(o, t).eval({o: np.concatenate([out, out]), t: one_hot})
    np.testing.assert_array_equal(np.ravel(got), [1., 0.])
    # Static operands: each row is a column of CNTK's matrix.
    got = C.classification_error(out[0], tgt[0]).eval()
    np.testing.assert_array_equal(np.ravel(got), [1., 0., 0.])


def test_debugging_switches_cntks_test_setup_calls():
    C.debugging.set_computation_network_track_gap_nans(True)
    assert C.debugging.get_computation_network_track_gap_nans()
    C.debugging.set_computation_network_track_gap_nans(False)


def test_argument_forms_cntk_accepted():
    i = C.input_variable(1, name='i')
    np.testing.assert_array_equal((i + 3).eval({'i': [[3.]]}), [[6.]])  # data keyed by the argument's name
    with pytest.raises(ValueError, match="no argument named 'j'"):
        (i + 3).eval({'j': [[3.]]})
    data = np.array([[1.0, 1.2, 1.9], [2.3, 3.4, 3.9], [4.5, 5.7, 5.9]], np.float32)
    # gather along an axis: NumPy's take
    np.testing.assert_allclose(C.gather(data, np.array([0., 2.], np.float32), axis=1).eval(),
                               np.take(data, [0, 2], axis=1))
    np.testing.assert_allclose(C.gather(data[:, None, :], np.array([0., 2.], np.float32), axis=2).eval(),
                               np.take(data[:, None, :], [0, 2], axis=2))
    # pad's mode as CNTK's integer constants (1: reflect)
    a = np.arange(6.).reshape(2, 3).astype(np.float32)
    np.testing.assert_array_equal(C.pad(a, [(1, 1), (2, 2)], mode=1).eval(), np.pad(a, [(1, 1), (2, 2)], 'reflect'))
    # a negative stride: [begin, end) by its magnitude, last element first
    rows = np.array([[1, 2], [-3, 4], [-2, 5], [7, 8], [-9, 6]], np.float32)
    np.testing.assert_array_equal(C.slice(rows, 0, 0, 5, -2).eval(), rows[[4, 2, 0]])
    np.testing.assert_array_equal(C.slice(rows[:2], 1, 0, 2, -1).eval(), [[2, 1], [4, -3]])
    with pytest.raises(ValueError, match='CloneMethod'):
        (i + 3).clone(2)
    with pytest.raises(ValueError, match='fewer than two axes'):
        C.transpose(C.input_variable(2))
    with pytest.raises(ValueError, match='unit'):
        C.training_parameter_schedule(0.01, unit='not_supported')


def test_sequences_of_scalars_given_without_their_axis_of_one():
    s = C.sequence.input_variable(1)
    seqs = [np.arange(7, dtype=np.float32), np.arange(4, dtype=np.float32)]
    got = C.sequence.reduce_max(s).eval({s: seqs})
    np.testing.assert_array_equal(np.ravel(got), [6., 3.])
    got = C.sequence.reduce_sum(s).eval({s: np.ones((3, 5), np.float32)})  # [batch, length]
    np.testing.assert_array_equal(np.ravel(got), [5., 5., 5.])


def test_learner_update_takes_a_gradient_with_extra_axes_of_one():
    p = C.parameter(shape=(1,), init=1)
    learner = C.sgd([p], lr=C.learning_parameter_schedule(0.1))
    learner.update({p: np.asarray([[2.]], np.float32)}, 1)
    np.testing.assert_allclose(p.value, [0.8])


def test_a_negative_stride_on_a_batched_operand_and_its_gradient():
    x = C.input_variable((2, 3), needs_gradient=True)
    d = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    f = C.slice(x, 1, 0, 3, -2)  # columns 0 and 2, last first
    np.testing.assert_array_equal(f.eval({x: d}), d[:, :, ::-2])
    np.testing.assert_array_equal(f.grad({x: d}, [x]), [[[1., 0., 1.], [1., 0., 1.]]])


def test_ndarrayviews_are_taken_wherever_data_is():
    x = C.input_variable(2)
    w = C.parameter(shape=2)
    g = (x + w).grad({x: np.asarray([[1, 2]], np.float32)}, wrt=[w], as_numpy=False)
    w.value = g.data  # an NDArrayView
    np.testing.assert_array_equal(w.value, [1., 1.])
    nd = C.NDArrayView.from_dense(np.ones((2, 3), np.float32))
    assert C.Value.create(C.sequence.input_variable(3), [nd]).shape == (1, 2, 3)


def test_classification_error_compares_first_maxima_and_mixes_static_and_batched_operands():
    o = C.input_variable(4)
    soft = np.array([0., 0., 0.5, 0.5], np.float32)  # first maximum at 2; the output's at 3
    np.testing.assert_array_equal(np.ravel(C.classification_error(o, soft).eval({o: [[1., 2., 3., 4.]]})), [1.])
    t = C.input_variable((3, 4))
    out = np.array([[1., 2., 3., 4.], [6., 2., 7., 4.], [1., 5., 3., 4.]], np.float32)
    tgt = np.array([[[0., 0., 0.5, 0.5], [0., 0., 1., 0.], [0., 1., 0., 0.]]], np.float32)
    got = C.classification_error(out, t, axis=1).eval({t: tgt})  # a static output against batched targets
    np.testing.assert_allclose(np.ravel(got), [1 / 3.], rtol=1e-6)


def test_convolution_without_a_reduction_axis():
    # CNTK's reduction_rank=0: no channel axis on the operand; a kernel of the operand's rank gives one
    # map (an axis of 1 in front), one more axis gives that many maps.
    a = C.input_variable((3, 3))
    w = np.arange(4, dtype=np.float32).reshape(2, 2)
    y = C.convolution(w, a, auto_padding=[True], reduction_rank=0)
    got = y.eval({a: np.arange(9, dtype=np.float32).reshape(1, 3, 3)})
    np.testing.assert_array_equal(got, [[[[19, 25, 10], [37, 43, 16], [7, 8, 0]]]])
    maps = C.convolution(np.ones((3, 2, 2), np.float32), a, auto_padding=[False], reduction_rank=0)
    assert maps.shape == (3, 2, 2)
    np.testing.assert_array_equal(maps.eval({a: np.ones((1, 3, 3), np.float32)}), np.full((1, 3, 2, 2), 4.))


def test_unpack_without_its_mask_is_one_output():
    x = C.sequence.input_variable(2)
    f = C.sequence.unpack(x, -1.0, no_mask_output=True)
    assert len(f.outputs) == 1
    got = (f * 1).eval({x: [np.ones((2, 2), np.float32), np.ones((1, 2), np.float32)]})
    np.testing.assert_array_equal(got, [[[1., 1.], [1., 1.]], [[1., 1.], [-1., -1.]]])
    assert len(C.sequence.unpack(x, 0).outputs) == 2


def test_inputs_with_inferred_dims_run_on_the_datas_size():
    # CNTK's pooling-geometry tests: an input of shape (-1, -1, -1) pools whatever image it is given.
    a = C.input_variable((C.InferredDimension,) * 3)
    img = np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6)
    y = C.pooling(a, C.MAX_POOLING, (1, 5, 5), (1, 3, 3), auto_padding=[True])
    np.testing.assert_array_equal(y.eval({a: img}), [[[[21, 23], [33, 35]]]])
    y = C.pooling(a, C.MAX_POOLING, (1, 4, 4), (1, 2, 2), auto_padding=[True, False])
    np.testing.assert_array_equal(y.eval({a: img}), [[[[15, 17], [27, 29], [33, 35]]]])


def test_layers_take_initial_values_and_plain_functions():
    y = C.input_variable(2)
    e = C.layers.Embedding(3, init=[[1, 3, 2], [3, 4, 1]])  # an initial value, still trainable
    np.testing.assert_array_equal(e(y).eval({y: np.array([[-1., 1.]], np.float32)}), [[2., 1., -1.]])
    assert e.E.is_parameter
    d = C.layers.Dense(2, init=np.array([[1., 2.], [3., 4.]]), bias=False)
    np.testing.assert_array_equal(d(y).eval({y: np.array([[1., 1.]], np.float32)}), [[4., 6.]])
    with pytest.raises(Exception, match='values'):
        C.layers.Dense(2, init=np.ones((3, 3)))(y).eval({y: np.ones((1, 2), np.float32)})
    r = C.layers.ResNetBlock(C.square)(y)  # x**2 + x
    np.testing.assert_array_equal(r.eval({y: np.array([[2., -1.]], np.float32)}), [[6., 0.]])
    ln = C.layers.LayerNormalization()(C.input_variable(4))
    assert sorted(p.shape for p in ln.parameters) == [(4,), (4,)]  # a scale and a bias per feature


def test_axis_spelling_and_renaming():
    assert repr(C.Axis(1)) == "Axis('staticAxisIdx=1')" and repr(C.Axis(-1)) == "Axis('staticAxisIdx=-1')"
    assert repr(C.Axis.all_axes()) == "Axis('AllAxes')"
    assert str(C.Axis.unknown_dynamic_axes()) == "(Axis('UnknownAxes'),)"
    x = C.input_variable(1)
    f = C.plus(x, x, name='first')
    with pytest.raises(ValueError):
        f.name = 'second'
    C.cntk_py.allow_renaming_functions()
    try:
        f.name = 'second'
        assert f.name == 'second'
    finally:
        from ctk import _ctk
        _ctk._allow_renaming_functions(False)  # process-wide in CNTK too: restored for the other tests


def test_a_batch_value_broadcasts_along_the_frames_of_a_sequence():
    # CNTK's sequence auto-broadcast: x [#, *] times y [#] multiplies each frame of x by its sample of y.
    x = C.sequence.input_variable(3)
    y = C.input_variable(3)
    f = x * y
    got = f.eval({x: [np.array([[1, 2, 3], [4, 5, 6]], np.float32), np.ones((1, 3), np.float32)],
                  y: np.array([[1, 2, 3], [2, 2, 2]], np.float32)})
    np.testing.assert_array_equal(got[0], [[1., 4., 9.], [4., 10., 18.]])
    np.testing.assert_array_equal(got[1], [[2., 2., 2.]])
    g = f.grad({x: [np.ones((2, 3), np.float32)], y: np.array([[1, 2, 3]], np.float32)}, [y])
    np.testing.assert_array_equal(g, [[2., 2., 2.]])  # summed over the frames it was broadcast to


def test_cntk_py_dictionary_holds_python_values():
    config = C.cntk_py.Dictionary()
    config['cacheIndex'] = True
    config['traceLevel'] = 2
    assert config['cacheIndex'] is True and config['traceLevel'] == 2


def test_convolution_transpose_without_a_reduction_axis_and_with_a_full_output_shape():
    a = C.input_variable((3, 3))
    w = np.arange(4, dtype=np.float32).reshape(2, 2)
    y = C.convolution_transpose(w, a, auto_padding=[False], reduction_rank=0)
    got = y.eval({a: np.arange(9, dtype=np.float32).reshape(1, 3, 3)})
    np.testing.assert_array_equal(got, [[[[0, 0, 1, 2], [0, 5, 11, 11], [6, 23, 29, 23], [12, 32, 37, 24]]]])
    # output_shape as CNTK's tests give it, the channel axis included
    y = C.convolution_transpose(w, a, auto_padding=[True], strides=2, output_shape=(1, 5, 6), reduction_rank=0)
    assert y.shape == (1, 5, 6)
    x = C.input_variable((1, 3, 3))
    y = C.convolution_transpose(w.reshape(1, 1, 2, 2), x, auto_padding=[True], strides=2, output_shape=(1, 5, 6))
    assert y.shape == (1, 5, 6)


def test_forward_refuses_an_output_of_another_graph():
    x, y = C.input_variable(2), C.input_variable(2)
    s, t = x + 2, x * y
    data = {x: [[2., 1.]], y: [[4., 6.]]}
    with pytest.raises(ValueError, match='not computed by'):
        t.forward(data, s.outputs)
    inner = C.plus(x, y)
    f = C.square(inner)
    _, got = f.forward(data, [inner.output])  # an intermediate output of the graph is fine
    np.testing.assert_array_equal(got[inner.output], [[6., 7.]])


def test_seq_starts_are_refused_with_value_objects():
    x = C.input_variable(10, is_sparse=True)
    z = C.times(x, np.eye(10, dtype=np.float32))
    batch = C.Value.one_hot([[2, 5], [0, 1, 6]], num_classes=10)
    assert len(batch) == 2
    with pytest.raises(ValueError, match='seq_starts'):
        z.eval(({x: batch}, len(batch) * [True]))
    with pytest.raises(ValueError, match='seq_starts'):
        z.eval({x: (batch, len(batch) * [True])})
