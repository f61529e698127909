# Model files from Python: Function.save / load_model / Function.load in CNTK's v2 format, CNTK's own
# files, and errors.
import os

import numpy as np
import pytest

import cntk as C
from cntk.ops.functions import load_model, ModelFormat

SHARED = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'testdata', 'cntk')


def small_convnet():
    x = C.input_variable((1, 12, 12), name='features')
    with C.layers.default_options(activation=C.relu):
        z = C.layers.Sequential([C.layers.Convolution2D((3, 3), 4, pad=True),
                                 C.layers.MaxPooling((2, 2), strides=(2, 2)),
                                 C.layers.Dense(10, activation=None)])(x)
    return x, z


def test_save_and_load_round_trip(tmp_path, rng):
    x, z = small_convnet()
    path = str(tmp_path / 'model.dnn')
    z.save(path)
    loaded = C.load_model(path)
    data = rng.standard_normal((3, 1, 12, 12)).astype(np.float32)
    np.testing.assert_array_equal(z.eval({x: data}), loaded.eval({loaded.arguments[0]: data}))
    assert loaded.arguments[0].name == 'features'
    assert len(loaded.parameters) == len(z.parameters)
    again = C.Function.load(path, format=C.ModelFormat.CNTKv2)
    np.testing.assert_array_equal(z.eval({x: data}), again.eval({again.arguments[0]: data}))
    assert load_model is C.load_model and ModelFormat is C.ModelFormat


@pytest.mark.skipif(not os.path.isdir(SHARED), reason='the shared CNTK test files are not here')
def test_loads_cntk_written_models():
    m = C.load_model(os.path.join(SHARED, 'models-v2', 'initial_policy_network.dnn'))
    assert m.arguments[0].shape == (2,)
    assert m.output.shape == (3,)
    assert m.output.owner.op_name == 'Dense'
    out = m.eval({m.arguments[0]: np.zeros((1, 1, 2), np.float32)})  # one sequence of one step
    np.testing.assert_allclose(np.asarray(out).reshape(-1), [-0.23398998, 0.93081999, -0.69684297], rtol=1e-6)


def test_errors(tmp_path):
    with pytest.raises(OSError):
        C.load_model(str(tmp_path / 'missing.dnn'))
    bad = tmp_path / 'bad.dnn'
    bad.write_bytes(b'\x08\x01\x12\xff\xff\xff')
    with pytest.raises(OSError):
        C.load_model(str(bad))
    x, z = small_convnet()
    with pytest.raises(ValueError):
        z.save(str(tmp_path / 'v1.dnn'), format=C.ModelFormat.CNTKv1)


def test_load_from_bytes(tmp_path, rng):
    x, z = small_convnet()
    path = tmp_path / 'model.dnn'
    z.save(str(path))
    loaded = C.Function.load(path.read_bytes())
    data = rng.standard_normal((2, 1, 12, 12)).astype(np.float32)
    np.testing.assert_array_equal(z.eval({x: data}), loaded.eval({loaded.arguments[0]: data}))
    with pytest.raises(OSError):
        C.load_model(b'\x08\x01\x12\x05garbage')


def test_save_makes_the_folders_on_the_way(tmp_path):
    # As CNTK: ConvNet_MNIST.py saves into a folder that does not exist yet.
    x, z = small_convnet()
    path = tmp_path / 'Models' / 'ConvNet' / 'model.dnn'
    z.save(str(path))
    assert path.is_file() and not path.with_name('model.dnn.tmp').exists()
    (tmp_path / 'file').write_text('')
    with pytest.raises(OSError, match=r"cannot write '.*file/sub/model\.dnn'"):
        z.save(str(tmp_path / 'file' / 'sub' / 'model.dnn'))
