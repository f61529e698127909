# Hostile calls and files that crashed the interpreter or lost their error text: sizes whose byte count
# passed 64 bits, integers past C's ranges, and input bytes that are not UTF-8. Each ends in a Python
# exception that names what is wrong.
import os

import numpy as np
import pytest

import cntk as C
from cntk.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs


@pytest.mark.parametrize('shape', [(1 << 31, 1 << 31), (1 << 62,), (1 << 61, 2), ((1 << 63) - 1,)])
@pytest.mark.parametrize('init', [None, 0.5, 'glorot'])
def test_parameters_too_large_to_address_are_value_errors(shape, init):
    kwargs = {} if init is None else {'init': C.glorot_uniform() if init == 'glorot' else init}
    with pytest.raises(ValueError, match=r"Parameter 'big': shape .* more than a 64-bit address space"):
        C.parameter(shape, name='big', **kwargs).value


@pytest.mark.parametrize('shape', [(1 << 31, 1 << 31), (1 << 62,)])
def test_constants_too_large_to_address_are_value_errors(shape):
    with pytest.raises(ValueError, match="[Cc]onstant 'c'"):
        C.constant(1.0, shape=shape, name='c').value
    with pytest.raises(ValueError, match='address space|64-bit'):
        C.constant(0.0, shape=shape)


def test_integers_past_cs_ranges_are_value_errors_naming_the_argument():
    x = C.input_variable((2, 3))
    with pytest.raises(ValueError, match='shape 18446744073709551616 is out of range'):
        C.parameter((1 << 64, 2))
    with pytest.raises(ValueError, match='axis 1099511627776 is out of range'):
        C.reduce_sum(x, axis=1 << 40)
    with pytest.raises(ValueError, match='Axis.*more than the 64 axes'):
        C.splice(x, x, axis=1 << 30)
    with pytest.raises(ValueError, match='axis'):
        C.splice(x, x, axis=1 << 40)
    with pytest.raises(ValueError, match='perm'):
        C.transpose(x, perm=(0, 1 << 33))
    with pytest.raises(ValueError, match='num_classes'):
        C.one_hot(x, 1 << 70)
    with pytest.raises(ValueError, match='begin_index'):
        C.slice(x, 0, 1 << 64, 2)
    with pytest.raises(ValueError, match='output_rank'):
        C.times(x, C.parameter((3, 4)), output_rank=1 << 40)
    with pytest.raises(ValueError, match='groups'):
        C.convolution(C.parameter((2, 1, 3, 3)), C.input_variable((1, 5, 5)), groups=1 << 70)
    with pytest.raises(TypeError, match='axis must be an integer'):
        C.reduce_sum(x, axis=1.5)
    # numpy integers are integers; ordinary values keep working.
    assert C.reduce_sum(x, axis=np.int64(1)).shape == (2, 1)
    assert C.splice(x, x, axis=np.int32(0)).shape == (4, 3)
    assert C.parameter((np.int64(2), 3)).shape == (2, 3)


def ctf_source(path):
    return MinibatchSource(CTFDeserializer(str(path), StreamDefs(x=StreamDef(field='x', shape=3))),
                           randomize=False, max_sweeps=1)


def test_non_utf8_bytes_in_a_ctf_file_reach_python_escaped(tmp_path):
    path = tmp_path / 'bad.ctf'
    path.write_bytes(b'|x 1 \xff 3\n')
    with pytest.raises(OSError) as info:
        ctf_source(path).next_minibatch(1)
    text = str(info.value)
    assert 'bad.ctf' in text and '\\xff' in text, text


def test_non_utf8_bytes_in_a_model_file_reach_python_escaped(tmp_path):
    x = C.input_variable(3, name='x')
    z = C.layers.Dense(2)(x)
    good = tmp_path / 'good.onnx'
    z.save(str(good), format=C.ModelFormat.ONNX)
    data = good.read_bytes()
    # The op type 'Gemm' or 'MatMul' becomes bytes that are not UTF-8: an unknown op, named escaped.
    for op in (b'MatMul', b'Gemm'):
        if op in data:
            bad = data.replace(op, b'\xff' * len(op), 1)
            break
    path = tmp_path / 'bad.onnx'
    path.write_bytes(bad)
    with pytest.raises((OSError, ValueError, NotImplementedError)) as info:
        C.Function.load(str(path), format=C.ModelFormat.ONNX)
    assert '\\xff' in str(info.value), str(info.value)


def test_names_that_are_not_utf8_in_model_files_load_as_text(tmp_path):
    # ONNX (proto2) does not check that names are UTF-8: they come back with the bytes escaped.
    x = C.input_variable(3, name='xin')
    z = C.layers.Dense(2)(x)
    z.save(str(tmp_path / 'good.onnx'), format=C.ModelFormat.ONNX)
    path = tmp_path / 'names.onnx'
    path.write_bytes((tmp_path / 'good.onnx').read_bytes().replace(b'xin', b'x\xffn'))
    loaded = C.Function.load(str(path), format=C.ModelFormat.ONNX)
    assert [a.name for a in loaded.arguments] == ['x\\xffn']
    np.testing.assert_allclose(loaded.eval({loaded.arguments[0]: np.ones((1, 3), np.float32)}),
                               z.eval({x: np.ones((1, 3), np.float32)}), rtol=1e-6)
    # CNTK v1 names are UTF-16: a lone surrogate becomes U+FFFD (here in the name of an output).
    v1 = os.path.join(os.path.dirname(__file__), '..', 'fuzz', 'seeds', 'cntk_v1', 'MC.dnn')
    data = open(v1, 'rb').read()
    errs = 'errs'.encode('utf-16-le')
    assert errs in data
    path = tmp_path / 'names.dnn'
    path.write_bytes(data.replace(errs, b'e\x00\x00\xd8r\x00s\x00'))
    assert 'e\ufffdrs' in [o.name for o in C.load_model(str(path)).outputs]


def test_integer_arguments_take_what_python_takes_for_integers():
    x = C.input_variable((2, 3))
    assert C.parameter(np.array([2, 3])).shape == (2, 3)        # an array as a shape
    assert C.reduce_sum(x, axis=np.array([0, 1])).shape == (1, 1)
    assert C.reduce_sum(x, axis=True).shape == (2, 1)          # a bool is an int in Python
    assert C.transpose(x, perm=np.array([1, 0])).shape == (3, 2)
    with pytest.raises(TypeError, match='shape must be an integer'):
        C.parameter(('2', 3))
