# CNTK v1 node types written in CNTK's tag layout (cntk_v1_writer) and read back: each node's payload as
# its Save() wrote it, its inputs in CNTK's order, and its value against NumPy. Plus CNTK's tutorial
# ResNet (cifar10.ResNet.cmf: TransposeDimensions, RowStack with broadcasting, pre-version-13 batch
# normalization).
import os

import numpy as np
import pytest

import cntk as C
from cntk_v1_writer import network, parameter, input_value, i32, u64, f32, shape

V = 20  # a model version every layout below has


def load(tmp_path, nodes, out, version=V, name='m.dnn'):
    path = tmp_path / name
    path.write_bytes(network(nodes, version, features=['x'], outputs=[out]))
    m = C.load_model(str(path))
    return m, m.arguments[0], [o for o in m.outputs if o.name == out][0]


def x_node(sample_shape, sequence=True, version=V):
    return ('InputValue', 'x', input_value(sample_shape, version, sequence), [])


def evaluate(m, x, out, data):
    return C.combine([out]).eval({x: list(data)})


def test_transpose_dimensions_swaps_two_column_major_axes(tmp_path):
    # v1 axes 1 and 3 of a [4 x 3 x 2] (column-major) sample: NumPy's axes 2 and 0 of [2, 3, 4].
    m, x, out = load(tmp_path, [x_node((2, 3, 4)), ('TransposeDimensions', 't', i32(1) + i32(3), ['x'])], 't')
    data = np.arange(24, dtype=np.float32).reshape(1, 1, 2, 3, 4)
    assert out.shape == (4, 3, 2)
    np.testing.assert_array_equal(evaluate(m, x, out, data)[0][0], data[0, 0].transpose(2, 1, 0))


def test_slice_per_axis_with_an_end_counted_from_the_end(tmp_path):
    # Slice(v1 axis 1 = NumPy's last): begin 1, length -1 (end 0: to the end of the axis). Version 22 and
    # later write the axis count first; before, one axis.
    payload = i32(1) + u64(1) + u64(-1) + i32(1)
    m, x, out = load(tmp_path, [x_node((2, 5), version=22), ('Slice', 's', payload, ['x'])], 's', version=22)
    np.testing.assert_array_equal(evaluate(m, x, out, np.arange(10, dtype=np.float32).reshape(1, 1, 2, 5))[0][0],
                                  np.arange(10).reshape(2, 5)[:, 1:])
    payload = u64(1) + u64(-1) + i32(1)
    m, x, out = load(tmp_path, [x_node((2, 5)), ('Slice', 's', payload, ['x'])], 's', name='v20.dnn')
    data = np.arange(10, dtype=np.float32).reshape(1, 1, 2, 5)
    np.testing.assert_array_equal(evaluate(m, x, out, data)[0][0], data[0, 0][:, 1:])


def test_row_stack_splices_along_a_column_major_axis(tmp_path):
    nodes = [x_node((3,)), ('LearnableParameter', 'c', parameter(np.array([7., 8.]), 0.0), []),
             ('RowStack', 'r', i32(1), ['x', 'c'])]
    m, x, out = load(tmp_path, nodes, 'r')
    data = np.array([[[1., 2., 3.]]], np.float32)
    np.testing.assert_array_equal(evaluate(m, x, out, data)[0][0], [1, 2, 3, 7, 8])


def test_reshape_replaces_axes_with_an_inferred_dim(tmp_path):
    # Reshape all axes of [6] to column-major [2 x 0] (0 inferred): NumPy's [3, 2].
    m, x, out = load(tmp_path, [x_node((6,)), ('Reshape', 'r', i32(0) + i32(0) + shape([2, 0]), ['x'])], 'r')
    data = np.arange(6, dtype=np.float32).reshape(1, 1, 6)
    assert out.shape == (3, 2)
    np.testing.assert_array_equal(evaluate(m, x, out, data)[0][0], data[0, 0].reshape(3, 2))


@pytest.mark.parametrize('op', ['PastValue', 'FutureValue'])
def test_delays_with_time_step_and_initial_value(tmp_path, op):
    payload = i32(2) + shape([1]) + f32(-1.5)
    m, x, out = load(tmp_path, [x_node((1,)), (op, 'd', payload, ['x'])], 'd')
    seq = np.arange(1, 6, dtype=np.float32).reshape(5, 1)
    got = C.combine([out]).eval({x: [seq]})[0].ravel()
    want = [-1.5, -1.5, 1, 2, 3] if op == 'PastValue' else [3, 4, 5, -1.5, -1.5]
    np.testing.assert_array_equal(got, want)


def test_a_recurrent_loop_through_past_value(tmp_path):
    # h = x + PastValue(h): a running sum, with the PastValue node written before its operand (a loop).
    # A node after the loop (Negate) was built before the loop's shapes were known: it is re-inferred.
    nodes = [x_node((1,)), ('PastValue', 'p', i32(1) + shape([1]) + f32(0.0), ['h']), ('Plus', 'h', b'', ['x', 'p']),
             ('Negate', 'n', b'', ['h'])]
    m, x, out = load(tmp_path, nodes, 'h')
    seq = np.array([[1.], [2.], [3.], [4.]], np.float32)
    np.testing.assert_array_equal(C.combine([out]).eval({x: [seq]})[0].ravel(), [1, 3, 6, 10])
    m, x, out = load(tmp_path, nodes, 'n', name='after.dnn')
    assert out.shape == (1,)
    np.testing.assert_array_equal(C.combine([out]).eval({x: [seq]})[0].ravel(), [-1, -3, -6, -10])


def test_payload_free_nodes(tmp_path):
    nodes = [x_node((3,)), ('LearnableParameter', 'lo', parameter(np.array(-0.5), 0.0), []),
             ('LearnableParameter', 'hi', parameter(np.array(0.5), 0.0), []),
             ('Clip', 'clip', b'', ['lo', 'hi', 'x']), ('Cosine', 'cos', b'', ['clip']), ('Sin', 'sin', b'', ['cos']),
             ('LogPlus', 'lp', b'', ['sin', 'x']), ('Pass', 'pass', b'', ['lp']), ('Hardmax', 'hm', b'', ['pass']),
             ('Dropout', 'drop', u64(7) + u64(0), ['lp'])]
    data = np.array([[[-2., 0.25, 3.]]], np.float32)
    for out_name in ('lp', 'hm', 'drop'):
        m, x, out = load(tmp_path, nodes, out_name, name=out_name + '.dnn')
        got = evaluate(m, x, out, data)[0][0]
        s = np.sin(np.cos(np.clip(data[0, 0].astype(np.float64), -0.5, 0.5)))
        lp = np.logaddexp(s, data[0, 0])
        if out_name == 'hm':
            np.testing.assert_array_equal(got, np.eye(3)[np.argmax(lp)])
        else:
            np.testing.assert_allclose(got, lp, rtol=1e-6)


def test_a_slice_outside_its_axis_is_an_error_naming_the_node(tmp_path):
    payload = u64(4) + u64(3) + i32(1)
    with pytest.raises(OSError, match="node 's'.*slice"):
        load(tmp_path, [x_node((5,)), ('Slice', 's', payload, ['x'])], 's')


def test_the_tutorial_resnet_loads_and_evaluates():
    path = os.path.join(os.path.dirname(__file__), '..', 'data', 'cntk', 'models-v1', 'cifar10.ResNet.cmf')
    m = C.load_model(path)
    assert sorted(o.name for o in m.outputs) == ['ce', 'errs', 'z']
    x = [a for a in m.arguments if a.name == 'features'][0]
    z = [o for o in m.outputs if o.name == 'z'][0]
    assert x.shape == (3, 32, 32) and z.shape == (10,)
    data = np.random.RandomState(0).rand(2, 1, 3, 32, 32).astype(np.float32) * 255
    out = np.concatenate(C.combine([z]).eval({x: list(data)}))
    assert out.shape == (2, 10) and np.isfinite(out).all() and np.abs(out).max() < 1e3


def test_deprecated_product_and_sum_nodes(tmp_path):
    # TransposeTimes(A, x) = A^T x in CNTK's column-major algebra: A stored [3 x 2] is NumPy's [2, 3] V, so
    # the result is V @ x; its payload is Times' (output rank, inferInputRankToMap). DiagTimes(d, x) = d * x;
    # SumColumnElements sums each sample; CosDistance is the cosine between two samples; If selects.
    v = np.array([[1., 2., 3.], [-1., 0.5, 2.]], np.float32)
    d = np.array([2., -1., 0.5], np.float32)
    flag = np.array([1., 0., 1.], np.float32)
    nodes = [x_node((3,)),
             ('LearnableParameter', 'V', parameter(v), []),
             ('LearnableParameter', 'd', parameter(d, 0.0), []),
             ('LearnableParameter', 'flag', parameter(flag, 0.0), []),
             ('TransposeTimes', 'tt', u64(1) + i32(-1), ['V', 'x']),
             ('DiagTimes', 'dt', b'', ['d', 'x']),
             ('SumColumnElements', 'sc', b'', ['x']),
             ('CosDistance', 'cd', b'', ['x', 'd']),
             ('If', 'sel', b'', ['flag', 'x', 'd'])]
    data = np.array([[[0.5, -2., 3.]]], np.float32)
    x0 = data[0, 0].astype(np.float64)
    expected = {'tt': v.astype(np.float64) @ x0, 'dt': d * x0, 'sc': x0.sum(),
                'cd': x0 @ d / np.linalg.norm(x0) / np.linalg.norm(d), 'sel': np.where(flag != 0, x0, d)}
    for name, want in expected.items():
        m, x, out = load(tmp_path, nodes, name, name=name + '.dnn')
        np.testing.assert_allclose(np.asarray(evaluate(m, x, out, data)[0][0]).reshape(np.shape(want)), want,
                                   rtol=1e-6, err_msg=name)


def test_sum_elements_sums_over_the_whole_minibatch(tmp_path):
    m, x, out = load(tmp_path, [x_node((2,)), ('SumElements', 's', b'', ['x'])], 's')
    data = np.array([[[1., 2.]], [[3., 4.5]]], np.float32)
    got = np.asarray(evaluate(m, x, out, data))
    assert got.size == 1 and got.item() == 10.5  # one total, not one sum per sample


def test_reduce_elements_with_and_without_kept_dims(tmp_path):
    # Payload: axis (1-based column-major; 0 = all static axes), the operation, and from version 24 the
    # keepDimensions flag (before, the reduced axes stay as 1s).
    from cntk_v1_writer import wstr
    data = np.array([[[[1., -2., 3.], [4., 5., -6.]]]], np.float32)  # one sample [2, 3]
    sample = data[0, 0].astype(np.float64)
    cases = [(20, i32(1) + wstr('Sum'), sample.sum(axis=1, keepdims=True)),
             (25, i32(2) + wstr('Max') + b'\x00', sample.max(axis=0)),
             (25, i32(0) + wstr('Mean') + b'\x00', np.array([sample.mean()])),
             (25, i32(1) + wstr('LogSum') + b'\x01', np.log(np.exp(sample).sum(axis=1, keepdims=True))),
             (25, i32(1) + wstr('Argmax') + b'\x00', sample.argmax(axis=1).astype(np.float64))]
    for k, (version, payload, want) in enumerate(cases):
        nodes = [x_node((2, 3), version=version), ('ReduceElements', 'r', payload, ['x'])]
        m, x, out = load(tmp_path, nodes, 'r', version=version, name='r%d.dnn' % k)
        assert out.shape == want.shape, (k, out.shape)
        np.testing.assert_allclose(evaluate(m, x, out, data)[0][0], want, rtol=1e-6, err_msg=str(k))
    with pytest.raises(Exception, match="reduction 'Median'"):
        load(tmp_path, [x_node((2, 3)), ('ReduceElements', 'r', i32(1) + wstr('Median'), ['x'])], 'r',
             name='bad.dnn')


def test_a_half_precision_model_evaluates_in_float16(tmp_path):
    # Every node tagged 'half' (CNTK's ComputationNode<half>): parameters of 2-byte values, PastValue's
    # initial value as a 2-byte float.
    rng = np.random.RandomState(0)
    w = rng.uniform(-1, 1, (3, 2)).astype(np.float16)  # NumPy's [in, out]: CNTK's column-major W [out x in] of Times(W, x)
    b = rng.uniform(-1, 1, (2,)).astype(np.float16)
    nodes = [('half:InputValue', 'x', input_value((3,), V), []),
             ('half:LearnableParameter', 'W', parameter(w, dtype=np.float16), []),
             ('half:LearnableParameter', 'b', parameter(b, dtype=np.float16), []),
             ('half:Times', 't', u64(1) + i32(-1), ['W', 'x']),
             ('half:Plus', 'z', b'', ['t', 'b']),
             ('half:RectifiedLinear', 'r', b'', ['z']),
             ('half:PastValue', 'p', i32(1) + shape([2]) + np.float16(-0.5).tobytes(), ['r'])]
    m, x, out = load(tmp_path, nodes, 'p')
    assert x.dtype == np.float16 and out.dtype == np.float16
    seq = rng.uniform(-1, 1, (4, 3)).astype(np.float16)
    relu = np.maximum(seq.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32), 0)
    want = np.concatenate([np.full((1, 2), -0.5, np.float32), relu[:-1]])
    got = C.combine([out]).eval({x: [seq]})[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want, atol=2e-3)


def test_a_half_precision_matrix_with_a_float_element_size_is_corrupt(tmp_path):
    payload = parameter(np.ones((2,), np.float32))  # 4-byte values under a 'half' tag
    path = tmp_path / 'bad.dnn'
    path.write_bytes(network([('half:LearnableParameter', 'b', payload, [])], V, outputs=['b']))
    with pytest.raises(IOError, match="element size 4 does not match precision 'half'"):
        C.load_model(str(path))
