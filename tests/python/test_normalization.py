# cntk.ops.batch_normalization as a plain op (the layer wraps the same op): inference with the running
# statistics, training moving them, and CNTK's running_count default.
import numpy as np
import pytest

import cntk as C


def test_batch_normalization_op_inference_and_training():
    x = C.input_variable(3)
    scale = C.parameter(init=np.array([1.0, 2.0, 0.5], np.float32))
    bias = C.parameter(init=np.array([0.0, 1.0, -1.0], np.float32))
    mean = C.constant(np.array([0.5, -1.0, 2.0], np.float32))
    var = C.constant(np.array([4.0, 1.0, 0.25], np.float32))
    y = C.batch_normalization(x, scale, bias, mean, var, spatial=False, epsilon=1e-5, running_count=C.constant(0))
    data = np.array([[1.0, 0.0, 2.0], [-1.0, 2.0, 3.0]], np.float32)
    want = (data - mean.value) / np.sqrt(var.value + 1e-5) * scale.value + bias.value
    np.testing.assert_allclose(y.eval({x: data}), want, rtol=1e-5, atol=1e-6)

    # Training: batch statistics, and the running mean moves toward the batch mean.
    z = C.reduce_sum(y)
    trainer = C.Trainer(y, z, [C.sgd([scale, bias], 0.0)])  # rate 0: only the statistics change
    before = mean.value.copy()
    trainer.train_minibatch({x: data})
    assert not np.allclose(mean.value, before)
    assert np.all(np.abs(mean.value - data.mean(axis=0)) < np.abs(before - data.mean(axis=0)))


def test_batch_normalization_op_errors():
    x = C.input_variable(3)
    p = C.parameter(shape=(3,), init=1.0)
    with pytest.raises(ValueError):
        C.batch_normalization(x, C.parameter(shape=(4,), init=1.0), p, C.constant(np.zeros(3, np.float32)),
                              C.constant(np.ones(3, np.float32)), spatial=False,
                              running_count=C.constant(0)).eval({x: np.ones((1, 3), np.float32)})
