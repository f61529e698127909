# CNTK v1 node types of CNTK 2.x's networks (versions up to 31) and of older BrainScript/NDL models
# (legacy pooling and reshaping, packed sequence nodes), each written in CNTK's tag layout
# (cntk_v1_writer) and checked against NumPy.
import numpy as np
import pytest

import cntk as C
from cntk_v1_writer import network, parameter, input_value, i32, u32, u64, f32, f64, shape, wstr


def load(tmp_path, nodes, out, version=25, name='m.dnn', criteria=(), sequence=True):
    path = tmp_path / name
    path.write_bytes(network(nodes, version, features=['x'], outputs=[out], criteria=criteria))
    m = C.load_model(str(path))
    x = [a for a in m.arguments if a.name == 'x'][0]
    return m, x, [o for o in m.outputs if o.name == out][0]


def x_node(sample_shape, version=25, sequence=True):
    return ('InputValue', 'x', input_value(sample_shape, version, sequence), [])


def run(out, x, data):
    return C.combine([out]).eval({x: list(data)})


def one_sample(out, x, sample):
    """out for one sample (a one-frame sequence), as a NumPy array."""
    return np.asarray(run(out, x, np.asarray(sample, np.float32)[None, None])[0][0])


def test_version_27_slice_strides_and_reductions_over_several_axes(tmp_path):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    # Slice: count, then per axis begin, length, axis, stride (v1 axis 1 is NumPy's last).
    payload = i32(2) + u64(0) + u64(4) + i32(1) + i32(2) + u64(1) + u64(2) + i32(2) + i32(1)
    m, x, out = load(tmp_path, [x_node((2, 3, 4), 27), ('Slice', 's', payload, ['x'])], 's', 27)
    np.testing.assert_array_equal(one_sample(out, x, data), data[:, 1:3, 0:4:2])
    # ReduceElements: count, axes, operation, keepDimensions.
    payload = i32(2) + i32(1) + i32(3) + wstr('Sum') + b'\x00'
    m, x, out = load(tmp_path, [x_node((2, 3, 4), 27), ('ReduceElements', 'r', payload, ['x'])], 'r', 27,
                     name='r.dnn')
    np.testing.assert_allclose(one_sample(out, x, data), data.sum(axis=(0, 2)))


def test_reduce_elements_over_the_sequence_axis(tmp_path):
    payload = i32(-2) + wstr('Sum') + b'\x01'
    m, x, out = load(tmp_path, [x_node((2,)), ('ReduceElements', 'r', payload, ['x'])], 'r')
    seq = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32)
    np.testing.assert_allclose(np.asarray(C.combine([out]).eval({x: [seq]})).ravel(), [9., 12.])


def test_version_25_transpose_by_a_permutation(tmp_path):
    # Column-major permutation (2, 0, 1): out dim i is in dim perm[i].
    payload = i32(0) + i32(0) + u64(3) + u64(2) + u64(0) + u64(1)
    m, x, out = load(tmp_path, [x_node((2, 3, 4)), ('TransposeDimensions', 't', payload, ['x'])], 't')
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    col = data.transpose()  # column-major view: col[i, j, k]
    want = col.transpose(2, 0, 1).transpose()  # permute in column-major, back to NumPy's order
    assert out.shape == want.shape
    np.testing.assert_array_equal(one_sample(out, x, data), want)


@pytest.mark.parametrize('op, fn', [
    ('Acos', np.arccos), ('Asin', np.arcsin), ('Cosh', np.cosh), ('Sinh', np.sinh), ('Atan', np.arctan),
    ('Tan', np.tan), ('Asinh', np.arcsinh), ('Atanh', np.arctanh), ('StopGradient', lambda v: v),
    ('ExponentialLinearUnit', lambda v: np.where(v > 0, v, np.expm1(v))),
    ('StraightThrough', lambda v: np.where(v > 0, 1., -1.))])
def test_unary_nodes_without_payload(tmp_path, op, fn):
    m, x, out = load(tmp_path, [x_node((4,)), (op, 'u', b'', ['x'])], 'u')
    v = np.array([-0.75, -0.1, 0.3, 0.9])
    np.testing.assert_allclose(one_sample(out, x, v), fn(v), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('op, fn', [
    ('Equal', np.equal), ('NotEqual', np.not_equal), ('Less', np.less), ('LessEqual', np.less_equal),
    ('Greater', np.greater), ('GreaterEqual', np.greater_equal), ('Pow', np.power)])
def test_binary_nodes_without_payload(tmp_path, op, fn):
    b = np.array([1., 2., 0.5], np.float32)
    nodes = [x_node((3,)), ('LearnableParameter', 'b', parameter(b, 0.0), []), (op, 'o', b'', ['x', 'b'])]
    m, x, out = load(tmp_path, nodes, 'o')
    v = np.array([1., 3., 0.25])
    np.testing.assert_allclose(one_sample(out, x, v), fn(v, b.astype(np.float64)).astype(np.float64), rtol=1e-6)


def test_legacy_reshape_and_row_repeat(tmp_path):
    # LegacyReshape: target rows, then an image layout (column-major W, H, C in the old size_t form).
    legacy_layout = u32(3) + u32(0) + u64(2) + u64(1)  # W 3, H 2, C 1: TensorShape (C, W, H) = (1, 3, 2)
    nodes = [x_node((6,)), ('LegacyReshape', 'r', u64(6) + legacy_layout, ['x']), ('RowRepeat', 'rr', u64(3), ['x'])]
    m, x, out = load(tmp_path, nodes, 'r')
    v = np.arange(6, dtype=np.float32)
    assert out.shape == (2, 3, 1)
    np.testing.assert_array_equal(one_sample(out, x, v), v.reshape(2, 3, 1))
    m, x, out = load(tmp_path, nodes, 'rr', name='rr.dnn')
    np.testing.assert_array_equal(one_sample(out, x, v), np.tile(v, 3))
    bad = [x_node((6,)), ('LegacyReshape', 'r', u64(12) + shape([12]), ['x'])]
    with pytest.raises(NotImplementedError, match="LegacyReshape.*stacked or split frames"):
        load(tmp_path, bad, 'r', name='bad.dnn')


def numpy_pool(img, kh, kw, sh, sw, reduce):  # img [C, H, W], whole windows only
    c, h, w = img.shape
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    return np.array([[[reduce(img[k, i * sh:i * sh + kh, j * sw:j * sw + kw]) for j in range(ow)]
                      for i in range(oh)] for k in range(c)])


@pytest.mark.parametrize('op, reduce', [('MaxPooling', np.max), ('AveragePooling', np.mean)])
@pytest.mark.parametrize('layout', [0, 1])
def test_legacy_pooling_nodes_in_both_image_layouts(tmp_path, op, reduce, layout):
    # Payload: uint32 window width, uint32 layout, size_t window height, horizontal and vertical strides.
    payload = u32(3) + u32(layout) + u64(2) + u64(2) + u64(1)
    rng = np.random.RandomState(1)
    chw = rng.randn(2, 5, 7)
    sample = chw if layout == 1 else chw.transpose(1, 2, 0)  # HWC: (C, W, H) column-major is [H, W, C]
    m, x, out = load(tmp_path, [x_node(sample.shape), (op, 'p', payload, ['x'])], 'p')
    want = numpy_pool(chw, 2, 3, 1, 2, reduce)
    got = one_sample(out, x, sample)
    np.testing.assert_allclose(got if layout == 1 else got.transpose(2, 0, 1), want, rtol=1e-5)


def test_crop_with_stored_offsets(tmp_path):
    ref = np.zeros((2, 2, 3), np.float32)  # only its last two axes (CNTK's first two) matter
    nodes = [x_node((1, 4, 5)), ('LearnableParameter', 'ref', parameter(ref, 0.0), []),
             ('Crop', 'c', f64(2.0) + f64(1.0), ['x', 'ref'])]
    m, x, out = load(tmp_path, nodes, 'c')
    img = np.arange(20, dtype=np.float32).reshape(1, 4, 5)
    np.testing.assert_array_equal(one_sample(out, x, img), img[:, 1:3, 2:5])


def test_roi_pooling_version_26(tmp_path):
    # Output [width 2 x height 1] per region (column-major), max pooling, scale 1/2; regions (x1, y1, x2, y2).
    rois = np.array([[0., 0., 6., 2.]], np.float32)
    nodes = [x_node((1, 2, 4)), ('LearnableParameter', 'rois', parameter(rois, 0.0), []),
             ('ROIPooling', 'roi', shape([2, 1]) + i32(1) + f64(0.5), ['x', 'rois'])]
    m, x, out = load(tmp_path, nodes, 'roi', version=26)
    img = np.array([[[1., 5., 2., 0.], [3., 4., 8., 7.]]], np.float32)
    got = one_sample(out, x, img)
    assert got.shape == (1, 1, 1, 2)
    np.testing.assert_array_equal(got.ravel(), [5., 8.])  # columns 0-1 and 2-3 of rows 0-1
    with pytest.raises(NotImplementedError, match="fractions of the image"):
        load(tmp_path, [x_node((1, 2, 4)), ('LearnableParameter', 'rois', parameter(rois, 0.0), []),
                        ('ROIPooling', 'roi', shape([2, 1]), ['x', 'rois'])], 'roi', name='old.dnn')


def test_brainscript_gather_and_scatter_through_packed_nodes(tmp_path):
    # Gather(cond, x) = GatherPacked(PackedIndex(x, Where(cond)), x); Scatter(cond, y) =
    # ScatterPacked(cond, PackedIndex(cond, Where(cond)), y).
    nodes = [x_node((2,)), ('Greater', 'cond', b'', ['x0', 'zero']),
             ('Slice', 'x0', i32(1) + u64(0) + u64(1) + i32(1), ['x']),
             ('LearnableParameter', 'zero', parameter(np.array(0.), 0.0), []),
             ('Where', 'w', wstr('whereAxis'), ['cond']), ('PackedIndex', 'pi', b'', ['x', 'w']),
             ('GatherPacked', 'g', b'', ['pi', 'x']),
             ('PackedIndex', 'pi2', b'', ['cond', 'w']), ('ScatterPacked', 's', b'', ['cond', 'pi2', 'g'])]
    seq = np.array([[1., 10.], [-1., 20.], [2., 30.], [-3., 40.]], np.float32)
    m, x, out = load(tmp_path, nodes, 'g')
    np.testing.assert_array_equal(C.combine([out]).eval({x: [seq]})[0], seq[[0, 2]])
    m, x, out = load(tmp_path, nodes, 's', name='s.dnn')
    np.testing.assert_array_equal(C.combine([out]).eval({x: [seq]})[0], seq * (seq[:, :1] > 0))


def test_optimized_rnn_stack_is_ctks_op_with_the_stored_attributes(tmp_path):
    hidden, inputs = 3, 2
    x_py = C.sequence.input_variable(inputs)
    w_py = C.parameter((C.InferredDimension, hidden))
    ref = C.optimized_rnnstack(x_py, w_py, hidden, 1, bidirectional=True, recurrent_op='rnnTanh')
    w = np.random.RandomState(2).uniform(-0.5, 0.5, w_py.shape).astype(np.float32)
    payload = u64(1) + u64(1) + u64(hidden) + wstr('rnnTanh') + i32(-1)
    nodes = [x_node((inputs,)), ('LearnableParameter', 'W', parameter(w), []),
             ('OptimizedRNNStack', 'rnn', payload, ['W', 'x'])]
    m, x, out = load(tmp_path, nodes, 'rnn')
    seq = np.random.RandomState(3).randn(4, inputs).astype(np.float32)
    w_py.value = w
    np.testing.assert_allclose(C.combine([out]).eval({x: [seq]})[0], ref.eval({x_py: [seq]})[0], rtol=1e-5)


def test_criteria_regularizers_lookup_cast_and_trace(tmp_path):
    e = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32)  # ctk's [V 3, d 2]: E [2 x 3] column-major
    trace = (wstr('msg') + u64(1) + u64(1) + b'\x00' + b'\x00' + wstr('') + b'\x00' + b'\x00' + b'\x00' * 8 +
             u64(5) + u64(5))
    nodes = [x_node((6,)), ('LearnableParameter', 'E', parameter(e), []),
             ('LearnableParameter', 'p', parameter(np.array([0.5, 0.25, 0.25, 0.5, 0.25, 0.25]), 0.0), []),
             ('CrossEntropy', 'ce', b'', ['x', 'p']), ('MatrixL1Reg', 'l1', b'', ['E']),
             ('MatrixL2Reg', 'l2', b'', ['E']), ('LookupTable', 'emb', b'', ['E', 'x']),
             ('double,float:Cast', 'c64', b'', ['x']), ('Trace', 't', trace, ['x'])]
    v = np.array([0., 1., 0., 1., 0., 0.], np.float32)  # two one-hot words of a vocabulary of 3
    checks = {'ce': -np.log(0.25) - np.log(0.5), 'l1': np.abs(e).sum(), 'l2': np.sqrt((e ** 2).sum()),
              'emb': np.concatenate([e[1], e[0]]), 'c64': v, 't': v}
    for name, want in checks.items():
        m, x, out = load(tmp_path, nodes, name, version=31, name=name + '.dnn')
        got = np.asarray(C.combine([out]).eval({x: [v[None]]})).ravel() if name not in ('l1', 'l2') else \
            np.asarray(C.combine([out]).eval()).ravel()
        np.testing.assert_allclose(got, np.ravel(want), rtol=1e-6, err_msg=name)
    assert [o for o in C.load_model(str(tmp_path / 'c64.dnn')).outputs if o.name == 'c64'][0].dtype == np.float64


def test_inclusion_frequency_and_dropout_payloads_by_version(tmp_path):
    w = np.array([1., 3.], np.float32)
    # RandomSampleInclusionFrequency: allowDuplicates, sample count, then (version 17+) seed and offset.
    nodes = [x_node((1,), 17), ('LearnableParameter', 'w', parameter(w, 0.0), []),
             ('RandomSampleInclusionFrequency', 'f', b'\x01' + u64(4) + u64(1) + u64(0), ['w']),
             ('Plus', 'o', b'', ['x', 'f'])]
    m, x, out = load(tmp_path, nodes, 'o', version=17)
    np.testing.assert_allclose(one_sample(out, x, [0.]), [1., 3.])  # 4 draws * [1/4, 3/4]
    # Dropout before version 16 stores no random state.
    m, x, out = load(tmp_path, [x_node((2,), 15), ('Dropout', 'd', b'', ['x'])], 'd', version=15, name='d.dnn')
    np.testing.assert_array_equal(one_sample(out, x, [1., 2.]), [1., 2.])
    with pytest.raises(NotImplementedError, match="version 16.*platform-dependent"):
        load(tmp_path, [x_node((2,), 16), ('Dropout', 'd', u64(1) + u64(0), ['x'])], 'd', version=16,
             name='d16.dnn')


def test_a_criterion_ctk_does_not_compute_is_left_out_with_a_warning(tmp_path, capfd):
    nodes = [x_node((3,)), ('LearnableParameter', 'y', parameter(np.ones(3), 0.0), []),
             ('Softmax', 'z', b'', ['x']), ('SequenceWithSoftmax', 'seq', b'', ['y', 'z', 'x'])]
    m, x, out = load(tmp_path, nodes, 'z', criteria=['seq'])
    assert [o.name for o in m.outputs] == ['z']
    assert "WARNING" in capfd.readouterr().err
    np.testing.assert_allclose(one_sample(out, x, [0., 0., 0.]), [1 / 3.] * 3, rtol=1e-6)
    # As an output node it stays an error naming it.
    with pytest.raises(NotImplementedError, match="'seq' \\(SequenceWithSoftmax\\): lattice"):
        load(tmp_path, nodes, 'seq', name='out.dnn')
