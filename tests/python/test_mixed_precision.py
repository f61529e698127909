"""ctk's mixed precision from Python: C.Trainer(..., mixed_precision='bf16' | 'f16') trains with bf16/f16
products and f32 master weights (f16 with dynamic loss scaling) and reaches the f32 run's loss."""
import numpy as np
import pytest

import cntk as C


def train(mixed_precision, steps=40):
    C.cntk_py.set_fixed_random_seed(7)
    x = C.input_variable(8)
    y = C.input_variable(3)
    z = C.layers.Sequential([C.layers.Dense(16, activation=C.relu), C.layers.Dense(3)])(x)
    loss = C.cross_entropy_with_softmax(z, y)
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.05),
                             C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (loss, C.classification_error(z, y)), [learner],
                        mixed_precision=mixed_precision)
    rng = np.random.default_rng(3)
    losses = []
    for _ in range(steps):
        labels = rng.integers(0, 3, 32)
        features = rng.normal(0, 0.3, (32, 8)).astype(np.float32)
        features[np.arange(32), labels] += 1.0  # the class shows in the first three features
        trainer.train_minibatch({x: features, y: np.eye(3, dtype=np.float32)[labels]})
        losses.append(trainer.previous_minibatch_loss_average)
    return trainer, z, losses


def test_bf16_and_f16_reach_the_f32_loss():
    _, _, f32 = train(None)
    assert np.mean(f32[-5:]) < 0.3 * f32[0]
    for mode in ('bf16', 'f16'):
        trainer, z, losses = train(mode)
        assert abs(losses[0] - f32[0]) < 0.03 * f32[0], mode
        assert abs(np.mean(losses[-5:]) - np.mean(f32[-5:])) < 0.05 * f32[0], mode
        assert all(p.value.dtype == np.float32 for p in z.parameters), 'master weights stay f32'
        assert trainer.loss_scale == (1.0 if mode == 'bf16' else 1024.0)
        assert trainer.skipped_steps == 0


def test_unknown_mode_is_refused():
    x = C.input_variable(2)
    z = C.layers.Dense(2)(x)
    learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.1))
    with pytest.raises(ValueError, match='mixed_precision'):
        C.Trainer(z, C.squared_error(z, x), [learner], mixed_precision='f8')
