# Model files from Python: Function.save / load_model / Function.load in CNTK's v2 format, CNTK's own
# files, and errors.
import os

import numpy as np
import pytest

import cntk as C
from cntk.ops.functions import load_model, ModelFormat

SHARED = os.path.join(os.path.dirname(__file__), '..', 'data', 'cntk')


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


def _outputs(model, data):
    values = model.eval(data, outputs=list(model.outputs))
    return {o.name: values[o] for o in model.outputs}


def test_cntk_v1_logistic_regression_evaluates_like_a_float64_reference():
    # LR_reg.dnn (CNTK's BrainScript tests): p = Sigmoid(w' x + b), lr = Logistic(labels, p),
    # err = SquareError(labels, p); the reference is computed in float64 from the file's own parameters.
    m = C.load_model(os.path.join(SHARED, 'models-v1', 'LR_reg.dnn'))
    w = {p.name: p.value.astype(np.float64) for p in m.parameters}
    rng = np.random.RandomState(5)
    x = rng.uniform(0, 10, (6, 1, 2)).astype(np.float32)
    y = rng.randint(0, 2, (6, 1, 1)).astype(np.float32)
    features = [a for a in m.arguments if a.name == 'features'][0]
    labels = [a for a in m.arguments if a.name == 'labels'][0]
    out = _outputs(m, {features: list(x), labels: list(y)})
    z = x[:, 0].astype(np.float64) @ w['w'] + w['b']
    p = 1 / (1 + np.exp(-z))
    yy = y[:, 0].astype(np.float64)
    np.testing.assert_allclose(np.concatenate(out['p']), p, rtol=1e-5)
    # The loss reads the float32 p, as CNTK's node did (1 - p of a p near 1 is float32's spacing there).
    p32 = p.astype(np.float32).astype(np.float64)
    with np.errstate(divide='ignore'):
        logistic = -np.where(yy == 1, np.log(p32), np.log(1 - p32))
    np.testing.assert_allclose(np.concatenate(out['lr']).ravel(), logistic.ravel(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.concatenate(out['err']).ravel(), ((yy - p) ** 2).ravel(), rtol=1e-4, atol=1e-6)


def test_cntk_v1_error_prediction_classifier_evaluates_like_a_float64_reference():
    # MC.dnn: z = w' x + b, ce = CrossEntropyWithSoftmax(labels, z), errs = ErrorPrediction(labels, z).
    m = C.load_model(os.path.join(SHARED, 'models-v1', 'MC.dnn'))
    w = {p.name: p.value.astype(np.float64) for p in m.parameters}
    rng = np.random.RandomState(6)
    x = rng.uniform(-3, 3, (8, 1, 2)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 8)][:, None, :]
    features = [a for a in m.arguments if a.name == 'features'][0]
    labels = [a for a in m.arguments if a.name == 'labels'][0]
    out = _outputs(m, {features: list(x), labels: list(y)})
    z = x[:, 0].astype(np.float64) @ w['w'] + w['b']
    np.testing.assert_allclose(np.concatenate(out['z']), z, rtol=1e-5, atol=1e-5)
    lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
    ce = lse - (y[:, 0] * z).sum(1)
    np.testing.assert_allclose(np.concatenate(out['ce']).ravel(), ce, rtol=1e-5, atol=1e-5)
    errs = (z.argmax(1) != y[:, 0].argmax(1)).astype(np.float64)
    np.testing.assert_array_equal(np.concatenate(out['errs']).ravel(), errs)
