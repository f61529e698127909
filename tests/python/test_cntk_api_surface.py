# CNTK 2.7's smaller API surface that its own tests and scripts use: Function.attributes with CNTK's keys,
# NumPy conversions of parameters, NDArrayView views, one-hot skips, axis tuples, CNTK's data-type rule.
import numpy as np
import pytest

import cntk as C
from cntk.internal import get_data_type, sanitize_dynamic_axes


def _kernel():
    return C.constant(value=np.array([2, -1, -1, 2], np.float32).reshape(1, 2, 2))


@pytest.mark.parametrize('transpose', [False, True])
def test_convolution_attributes_have_cntks_names_and_python_axis_order(transpose):
    x = C.input_variable((1, 5, 5))
    op = C.convolution_transpose if transpose else C.convolution
    a = op(_kernel(), x, auto_padding=[False, True]).root_function.attributes
    # auto_padding [False, True] is extended over the leading axes, as CNTK does.
    assert a['autoPadding'] == [False, False, True]
    assert a['sharing'] == [True, True, True]
    assert a['strides'] == (1, 1, 1) and a['dilation'] == (1, 1, 1)
    assert a['lowerPad'] == (0, 0, 0) and a['upperPad'] == (0, 0, 0)
    assert a['outputShape'] == (0,)  # CNTK 2.7's "no output shape given"
    assert a['transpose'] is transpose and a['sequential'] is False
    assert a['groups'] == 1 and a['maxTempMemSizeInSamples'] == 0
    assert a['kernelShape'][-2:] == (2, 2)


def test_slice_and_reduction_attributes_name_cntks_static_axis():
    x = C.input_variable((2, 3))
    # Python's axis 0 of a rank-2 operand is CNTK's static axis 1 (column-major).
    assert C.slice(x, 0, 1, 2).root_function.attributes == {
        'axis': ('ordered', 'static', 1), 'beginIndex': 1, 'endIndex': 2, 'sliceStrides': 1}
    a = C.reduce_sum(x, 1).root_function.attributes
    assert a['axis'] == ('ordered', 'static', 0) and a['reductionOpName'] == 'Sum'


def test_dropout_attributes_hold_its_rate_and_seed():
    a = C.dropout(C.input_variable(3), dropout_rate=0.5, seed=42).root_function.attributes
    assert a == {'dropoutRate': 0.5, 'rngSeed': 42, 'rngOffset': 0}


def test_a_composite_has_no_attributes_of_its_own():
    x = C.input_variable(2)
    f = C.combine([C.plus(x, x), C.abs(x)])
    with pytest.raises(ValueError, match='composite'):
        f._cntk_v2_attributes()


def test_a_saved_transposed_convolution_without_output_shape_loads(tmp_path):
    x = C.input_variable((1, 5, 5))
    f = C.convolution_transpose(_kernel(), x)
    path = str(tmp_path / 'deconv.model')
    f.save(path)
    data = np.random.RandomState(0).rand(1, 1, 5, 5).astype(np.float32)
    np.testing.assert_allclose(C.load_model(path).eval(data), f.eval({x: data}), rtol=1e-6)


def test_parameters_and_constants_convert_to_numpy_arrays():
    p = C.parameter((2, 3), init=1.5)
    np.testing.assert_array_equal(np.asarray(p), np.full((2, 3), 1.5, np.float32))
    assert np.asarray(C.constant([1., 2.]), dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match='only parameters and constants'):
        np.asarray(C.input_variable(2))


def test_an_array_on_the_left_of_an_operator_builds_a_graph_node():
    x = C.input_variable(2)
    for f in (np.array([1., 2.], np.float32) * x, np.float32(3) * x, np.array([1., 2.], np.float32) + x):
        assert isinstance(f, C.Function)
    np.testing.assert_allclose((np.array([1., 2.], np.float32) * x).eval({x: [[3., 4.]]}), [[3., 8.]])
    np.testing.assert_allclose((np.float32(3) - x).eval({x: [[1., 2.]]}), [[2., 1.]])


def test_ndarrayview_as_shape_and_slice_view():
    v = C.NDArrayView.from_dense(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert not v.is_read_only and not C.Value(batch=v).is_read_only
    np.testing.assert_array_equal(v.as_shape((3, 2)).asarray(), np.arange(6).reshape(3, 2))
    with pytest.raises(ValueError, match='elements'):
        v.as_shape((4,))
    # The extent covers the trailing axes; the leading axis is indexed at its offset and dropped.
    np.testing.assert_array_equal(v.slice_view((1, 1), (2,)).asarray(), [4., 5.])
    np.testing.assert_array_equal(v.slice_view((0, 1), (2, 2)).asarray(), [[1., 2.], [4., 5.]])
    with pytest.raises(ValueError, match='outside'):
        v.slice_view((1, 2), (2,))


def test_one_hot_skip_is_an_all_zero_sample_and_float_indices_are_refused():
    x = C.sequence.input_variable(3)
    a = C.Value.one_hot([[0, 1, C.Value.ONE_HOT_SKIP]], 3)
    np.testing.assert_array_equal((x * 1).eval({x: a}), [[[1, 0, 0], [0, 1, 0], [0, 0, 0]]])
    np.testing.assert_array_equal(C.Value.one_hot([[np.int64(2)]], 3).asarray(), [[[0, 0, 1]]])
    with pytest.raises(ValueError, match='not an integer'):
        C.Value.one_hot([[1.0, 2.0], [3.]], 4)


def test_dynamic_axes_are_tuples_and_sanitize_reverses_them():
    i = C.sequence.input_variable((1, 3))
    assert str(i.dynamic_axes) == "(Axis('defaultBatchAxis'), Axis('defaultDynamicAxis'))"
    assert isinstance((i + 1).dynamic_axes, tuple)
    axes = [C.Axis.default_batch_axis(), C.Axis.default_dynamic_axis()]
    assert sanitize_dynamic_axes(axes) == tuple(reversed(C.Axis.default_input_variable_dynamic_axes()))
    assert sanitize_dynamic_axes(C.Axis.default_dynamic_axis()) == (C.Axis.default_dynamic_axis(),)
    with pytest.raises(TypeError):
        sanitize_dynamic_axes(['not an axis'])


def test_get_data_type_prefers_graph_nodes_then_data():
    p32 = C.parameter(init=np.asarray(2, np.float32))
    p64 = C.parameter(init=np.asarray(2, np.float64))
    ph = C.placeholder(shape=2)
    n32, n64 = np.asarray(1, np.float32), np.asarray(1, np.float64)
    assert get_data_type(p32, n64) == np.float32 and get_data_type(p64, ph, n64) == np.float64
    assert get_data_type(n32, n64) == np.float64 and get_data_type(ph, n32) == np.float32
    assert get_data_type(ph, ph) is None
    assert get_data_type(1) == np.float32 and get_data_type(np.int64(1)) == np.float32


def test_training_parameter_schedule_takes_the_unit_by_name():
    assert C.training_parameter_schedule(0.01, unit='sample').minibatch_size == 1
    C.training_parameter_schedule(0.01, unit='minibatch')
    for bad in ('not_supported', 5):
        with pytest.raises(ValueError):
            C.training_parameter_schedule(0.01, unit=bad)


def test_a_cpu_cannot_be_locked_as_the_default_device():
    cpu = C.cpu()
    assert not C.try_set_default_device(cpu, True)
    assert C.try_set_default_device(cpu)
    assert C.use_default_device() == cpu


def test_save_as_legacy_model_says_why_it_is_not_there(tmp_path):
    from cntk.debugging import save_as_legacy_model
    with pytest.raises(NotImplementedError, match='reads CNTK v1 models but does not write'):
        save_as_legacy_model(C.abs(C.input_variable(2)), str(tmp_path / 'm.legacy'))


def test_cntk_py_exports_value_and_the_default_init_scale():
    from cntk.cntk_py import Value, NDArrayView
    ndav = NDArrayView.from_dense(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(Value(batch=ndav).asarray(), np.ones((2, 3)))
    assert C.initializer.DefaultParamInitScale == 1


def test_classification_error_keeps_the_rank_of_a_matrix_sample():
    o, t = C.input_variable((1, 4)), C.input_variable((1, 4))
    f = C.classification_error(o, t)
    assert f.shape == (1, 1)  # CNTK's [1 x 1] for a [1 x 4] sample
    got = f.eval({o: [[[1., 2., 3., 4.]]], t: [[[0., 0., 0., 1.]]]})
    np.testing.assert_array_equal(got, [[[0.]]])
    assert C.classification_error(C.input_variable(4), C.input_variable(4)).shape == (1,)


def test_a_list_of_indices_takes_those_elements_in_order():
    x = C.input_variable((2, 3), needs_gradient=True)
    d = np.array([[[1, 2, 3], [-4, 5, 6]]], np.float32)
    np.testing.assert_array_equal(x[0, [1, 2]].eval({x: d}), [[[2, 3]]])
    np.testing.assert_array_equal(x[:, [2, 0]].eval({x: d}), [[[3, 1], [6, -4]]])
    np.testing.assert_array_equal(x[..., [-1]].eval({x: d}), [[[3], [6]]])
    np.testing.assert_array_equal(x[0, [1, 2]].grad({x: d}, [x]), [[[0, 1, 1], [0, 0, 0]]])
    with pytest.raises(IndexError, match='out of range'):
        x[0, [1, 3]]


def test_max_unpooling_of_a_window_across_channels_on_sequences():
    # The window (2, 2, 1) covers the channel axis (2 channels): CNTK pools them together.
    a = C.sequence.input_variable((2, 4, 3), needs_gradient=True)
    window = (2, 2, 1)
    p = C.pooling(a, C.MAX_POOLING, window, window, [False])
    u = C.unpooling(p, a, C.MAX_UNPOOLING, window, window, [False])
    assert p.shape == (1, 2, 3) and u.shape == (2, 4, 3)
    v = np.random.RandomState(1).permutation(48).astype(np.float32).reshape(1, 2, 2, 4, 3)  # 2 frames
    want = np.zeros_like(v)
    for f in range(2):
        for j in range(2):
            for k in range(3):
                cells = v[0, f, :, 2 * j:2 * j + 2, k]  # both channels, two rows, one column
                c, r = np.unravel_index(np.argmax(cells), cells.shape)
                want[0, f, c, 2 * j + r, k] = cells[c, r]
    got = u.eval({a: v})
    np.testing.assert_array_equal(np.asarray(got[0]), want[0])
    # The gradient with respect to the pooled operand: 1 per window (its maximum is unique).
    pooled = C.sequence.input_variable((1, 2, 3), needs_gradient=True, sequence_axis=a.dynamic_axes[1])
    q = C.unpooling(pooled, a, C.MAX_UNPOOLING, window, window, [False])
    g = q.grad({a: v, pooled: np.ones((1, 2, 1, 2, 3), np.float32)}, [pooled])
    np.testing.assert_array_equal(np.asarray(g).reshape(-1), np.ones(12))


def test_reshape_of_free_dimensions_is_resolved_per_minibatch():
    x = C.input_variable((C.FreeDimension, 2, 2), needs_gradient=True)
    r = C.reshape(x, (-1,), 0, 2)
    assert r.shape == (C.FreeDimension, 2)  # the inferred dim stays free
    for n in (1, 3):
        d = np.arange(n * 4, dtype=np.float32).reshape(1, n, 2, 2)
        np.testing.assert_array_equal(r.eval({x: d}), d.reshape(1, n * 2, 2))
    d = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    np.testing.assert_array_equal(C.reshape(x, (-1,), 1, 3).eval({x: d}), d.reshape(1, 2, 4))
    np.testing.assert_array_equal((C.reshape(x, (-1,), 0, 2) * 3).grad({x: d}, [x]), np.full_like(d, 3))
    a = C.input_variable((C.FreeDimension,) * 3)
    f = C.reshape(a, (12, 2))  # a fixed target: checked against each minibatch's data
    np.testing.assert_array_equal(f.eval({a: np.zeros((1, 3, 4, 2), np.float32)}).shape, (1, 12, 2))
    with pytest.raises(ValueError, match=r'cannot reshape data of \[4, 5, 7\]'):
        f.eval({a: np.zeros((1, 4, 5, 7), np.float32)})


def test_a_constant_of_another_type_is_converted_to_the_operands_type():
    x = C.input_variable((3, 4, 4), dtype=np.float64)
    kernel = C.constant(1.0, (2, 3, 3, 3))  # float32
    y = C.convolution(kernel, x, auto_padding=[False, True, True])
    assert y.dtype == np.float64
    np.testing.assert_allclose(y.eval({x: np.ones((1, 3, 4, 4))})[0, :, 1, 1], [27., 27.])
    e = C.constant(np.array([[1, 2, 3], [4, 5, 6]]))  # an integer array: an int64 constant
    i = C.input_variable(2)
    np.testing.assert_array_equal(C.times(i, e).eval({i: [[1., 1.]]}), [[5., 7., 9.]])
    # Two inputs of different types are the graph's own mix: still refused.
    with pytest.raises(TypeError, match='different dtypes'):
        C.times(C.input_variable(2), C.input_variable((2, 2), dtype=np.float64))


class _Csr:
    """The attributes of a SciPy CSR matrix that ctk reads (SciPy is not a test dependency)."""

    def __init__(self, dense):
        dense = np.atleast_2d(np.asarray(dense, np.float32))
        self.shape = dense.shape
        self.indptr, self.indices, self.data = [0], [], []
        for row in dense:
            cols = np.nonzero(row)[0]
            self.indices += list(cols)
            self.data += list(row[cols])
            self.indptr.append(len(self.indices))


@pytest.mark.parametrize('is_sparse', [False, True])
def test_a_list_of_one_row_sparse_matrices_is_a_batch_of_samples(is_sparse):
    x = C.input_variable(4, is_sparse=is_sparse)
    rows = [[0, 1, 0, 0], [0.5, 0, 0, 2], [0, 0, 1, 0]]
    np.testing.assert_array_equal((x * 1).eval({x: [_Csr(r) for r in rows]}), rows)
    one_hot = [[0, 0, 1, 0], [1, 0, 0, 0]]  # every row a single 1: kept as indices
    np.testing.assert_array_equal((x * 1).eval({x: [_Csr(r) for r in one_hot]}), one_hot)
    with pytest.raises(ValueError, match='matrix 1 of the list has 2 rows'):
        (x * 1).eval({x: [_Csr(rows[0]), _Csr(rows[1:])]})


def test_one_samples_value_feeds_a_batched_input():
    w = C.parameter((3, 1), init=2.0)
    x = C.input_variable(1)
    g = (C.reduce_sum(w) * x).grad({x: [[2.]]}, [w], as_numpy=False)  # a Value of w's shape, no batch axis
    v = C.input_variable((3, 1))
    np.testing.assert_array_equal((v * 1).eval({v: g}), [[[2.], [2.], [2.]]])  # read as a batch of one


def test_times_can_sum_its_products_over_the_sequence_axis():
    seqs = [[0, 1, 2], [3], [4, 5, 6, 7, 8, 9]]
    right = C.sequence.input_variable(10, is_sparse=True)
    left = C.sequence.input_variable(1)
    f = C.times(left, right, infer_input_rank_to_map=C.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK)
    assert f.dynamic_axes == C.sequence.reduce_sum(C.times(left, right)).dynamic_axes
    weights = [np.full((len(s), 1), k + 1, np.float32) for k, s in enumerate(seqs)]
    got = f.eval({left: weights, right: C.Value.one_hot(seqs, 10)})
    want = np.zeros((3, 1, 10), np.float32)
    for k, s in enumerate(seqs):
        want[k, 0, s] = k + 1
    np.testing.assert_array_equal(got, want)
    assert C.TIMES_NO_INFERRED_INPUT_RANK == -1


class _AddOne(C.ops.functions.UserFunction):
    def __init__(self, x, needs_gradient=True, name='add_one'):
        super().__init__([x], name=name)
        self.needs_gradient, self.backward_calls = needs_gradient, 0

    def infer_outputs(self):
        x = self.inputs[0]
        return [C.output_variable(x.shape, x.dtype, x.dynamic_axes, needs_gradient=self.needs_gradient)]

    def forward(self, argument, device=None, outputs_to_retain=None):
        return None, argument + 1

    def backward(self, state, root_gradients):
        self.backward_calls += 1
        return root_gradients


def test_a_user_function_instance_is_an_operand_and_user_function_of_a_graph_is_its_composite():
    x = C.input_variable(2)
    f = x * _AddOne(x)  # CNTK's UserFunction was itself a Function
    np.testing.assert_array_equal(f.eval({x: [[1., 2.]]}), [[2., 6.]])
    g = C.user_function(f)
    assert g.is_composite
    np.testing.assert_array_equal(g.eval({x: [[1., 2.]]}), [[2., 6.]])


def test_a_user_function_output_that_needs_no_gradient_passes_none_back():
    x = C.input_variable(2, needs_gradient=True)
    op = _AddOne(x, needs_gradient=False)
    f = C.user_function(op)
    np.testing.assert_array_equal(f.grad({x: [[1., 2.]]}, [x]), [[0., 0.]])
    assert op.backward_calls == 0
    op2 = _AddOne(x)
    np.testing.assert_array_equal(C.user_function(op2).grad({x: [[1., 2.]]}, [x]), [[1., 1.]])
    assert op2.backward_calls == 1


def test_cntk_py_progress_writer_takes_cntks_constructor_arguments():
    import sys

    class Writer(C.cntk_py.ProgressWriter):
        def __init__(self):
            super().__init__(1, 0, 1, 0, sys.maxsize, 0)
            self.values = []
            self.__disown__()  # SWIG's hand-over, which CNTK scripts call

        def write(self, key, value):
            self.values.append((key, float(value)))

    x, y = C.input_variable(1), C.input_variable(1)
    z = C.times(x, C.parameter((1, 1), init=0.5))
    learner = C.sgd(z.parameters, C.learning_parameter_schedule_per_sample([0.3, 0.2], epoch_size=1))
    w = Writer()
    trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)), [learner], w)
    for _ in range(3):
        trainer.train_minibatch({x: [[2.]], y: [[1.]]})
    assert [v for _, v in w.values][:2] == pytest.approx([0.3, 0.2])


def test_functions_have_a_docstring_and_blocks_export_block_function():
    assert C.plus(C.input_variable(1), 1).__doc__
    from cntk.layers.blocks import BlockFunction
    assert BlockFunction is C.BlockFunction


def test_inputs_sharing_a_sequence_axis_need_sequences_of_the_same_lengths():
    x, ones = C.sequence.input_variable(1, name='x'), C.sequence.input_variable(1, name='ones')
    y = C.sequence.broadcast_as(C.sequence.last(ones), x)
    four = np.arange(1, 5, dtype=np.float32).reshape(4, 1)
    with pytest.raises(ValueError, match="Input\\('ones'.*Input\\('x'.*share their sequence axis"):
        y.eval({x: [four], ones: [np.ones((1, 1), np.float32)]})
    np.testing.assert_array_equal(y.eval({x: [four], ones: [four]})[0], np.full((4, 1), 4.))
    # One-hot data is checked without being made dense; its own axis lets it be of another length.
    labels = C.sequence.input_variable(3, is_sparse=True, sequence_axis=C.Axis('labelAxis'))
    z = C.sequence.reduce_sum(labels) + C.sequence.reduce_sum(x)
    assert z.eval({x: [four], labels: C.Value.one_hot([[0, 2]], 3)}).shape == (1, 3)
    words = C.sequence.input_variable(3, is_sparse=True)  # on x's (the default) sequence axis
    w = C.sequence.reduce_sum(words) + C.sequence.reduce_sum(x)
    with pytest.raises(ValueError, match='share their sequence axis'):
        w.eval({x: [four], words: C.Value.one_hot([[0, 2]], 3)})


def test_sanitize_batch_warns_when_it_copies_data_that_is_not_contiguous():
    from cntk.internal import sanitize_batch
    a1 = np.array([[1, 2], [3, 4]], np.float32)
    var = C.sequence.input_variable((2, 2))
    with pytest.warns(RuntimeWarning, match='not C-contiguous'):
        b = sanitize_batch(var, [a1.T, a1.T + 4])
    assert b.shape == (2, 1, 2, 2)
    np.testing.assert_array_equal(b.asarray()[0, 0], a1.T)
