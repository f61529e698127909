# Learners from Python: one update against a hand computation, and schedules with CNTK's semantics.
import numpy as np
import pytest

import cntk as C
from cntk.learners import (sgd, momentum_sgd, adam, adagrad, adadelta, rmsprop, nesterov, fsadagrad,
                           learning_parameter_schedule, learning_parameter_schedule_per_sample,
                           momentum_schedule, momentum_schedule_per_sample,
                           momentum_as_time_constant_schedule)


def test_sgd_one_step_per_minibatch_rate():
    w0 = np.array([1.0, 2.0], np.float32)
    p = C.parameter(init=w0)
    learner = sgd([p], lr=0.5)
    g = np.array([0.2, -0.4], np.float32)
    assert learner.update({p: g}, 4)
    # A per-minibatch rate applies to the mean gradient: the update divides the summed one by 4 samples.
    np.testing.assert_allclose(p.value, w0 - 0.5 * g / 4, rtol=1e-6)


def test_sgd_per_sample_rate_scales_to_minibatch():
    w0 = np.array([1.0], np.float32)
    p = C.parameter(init=w0)
    learner = sgd([p], learning_parameter_schedule_per_sample(0.1))
    learner.update({p: np.array([1.0], np.float32)}, 4)
    # Per-sample rates apply to the summed gradient as they are (CNTK 2.7).
    np.testing.assert_allclose(p.value, w0 - 0.1 * 1.0, rtol=1e-6)


def test_momentum_sgd_two_steps():
    p = C.parameter(init=np.array([0.0], np.float32))
    learner = momentum_sgd([p], 0.1, 0.9)  # unit gain: v = m v + (1 - m) g
    for _ in range(2):
        learner.update({p: np.array([1.0], np.float32)}, 1)
    v1 = 0.1
    v2 = 0.9 * v1 + 0.1
    np.testing.assert_allclose(p.value, [-(0.1 * v1 + 0.1 * v2)], rtol=1e-5)


def test_every_learner_constructs_and_steps():
    lr = learning_parameter_schedule(0.01)
    m = momentum_schedule(0.9)
    for make in [lambda ps: adam(ps, lr, m), lambda ps: adagrad(ps, lr), lambda ps: adadelta(ps),
                 lambda ps: rmsprop(ps, lr, 0.95, 1.2, 0.7, 10.0, 0.1), lambda ps: nesterov(ps, lr, m),
                 lambda ps: fsadagrad(ps, lr, m), lambda ps: sgd(ps, lr, l2_regularization_weight=0.1)]:
        p = C.parameter(init=np.ones(3, np.float32))
        learner = make([p])
        assert learner.update({p: np.ones(3, np.float32)}, 2)
        assert (p.value != 1).all()


def test_schedules():
    s = learning_parameter_schedule([0.1, 0.01], epoch_size=10)
    assert s(0) == pytest.approx(0.1) and s(10) == pytest.approx(0.01)
    assert learning_parameter_schedule_per_sample(0.5).minibatch_size == 1
    assert momentum_schedule_per_sample(0.99).minibatch_size == 1
    assert momentum_as_time_constant_schedule(1024)(0) == pytest.approx(np.exp(-1 / 1024))


def test_unknown_learner_option_is_a_type_error():
    p = C.parameter(init=np.ones(1, np.float32))
    with pytest.raises(TypeError):
        sgd([p], 0.1, no_such_option=1)


class MySgd(C.learners.UserLearner):
    """Plain SGD written in Python, as CNTK's UserLearner examples do."""

    def __init__(self, parameters, lr):
        super().__init__(parameters, C.learning_parameter_schedule(lr))
        self.lr = lr
        self.calls = 0

    def update(self, gradient_values, training_sample_count, sweep_end):
        self.calls += 1
        for p, g in gradient_values.items():
            p.value = p.value - self.lr * g / training_sample_count
        return True


def test_user_learner_goes_through_the_learner_protocol():
    # The Trainer steps a Python learner as every other: its update hears each minibatch's count and
    # sweep end, and the learner counts the samples and minibatches it was given.
    x = C.input_variable(2)
    z = C.layers.Dense(2)(x)
    seen = []

    class Recording(C.learners.UserLearner):
        def update(self, gradient_values, training_sample_count, sweep_end):
            seen.append((training_sample_count, sweep_end))
            return True

    learner = Recording(z.parameters, C.learning_parameter_schedule(0.1))
    trainer = C.Trainer(z, C.reduce_sum(z), [learner])
    trainer.train_minibatch({x: np.ones((3, 2), np.float32)})
    trainer.train_minibatch({x: np.ones((2, 2), np.float32)}, is_sweep_end=True)
    assert seen == [(3, False), (2, True)]
    assert learner.total_number_of_samples_seen == 5


def test_user_learner_trains_like_sgd():
    x = C.input_variable(2)
    y = C.input_variable(2)
    xs = np.array([[1, 0], [0, 1], [1, 1]], np.float32)
    ys = np.array([[1, 0], [0, 1], [1, 0]], np.float32)
    results = []
    for user in (True, False):
        C.set_fixed_random_seed(3)
        z = C.layers.Dense(2, activation=None)(x)
        loss = C.cross_entropy_with_softmax(z, y)
        learner = MySgd(z.parameters, 0.5) if user else C.sgd(z.parameters, C.learning_parameter_schedule(0.5))
        trainer = C.Trainer(z, loss, [learner])  # the learner passed inline keeps its Python half alive
        for _ in range(3):
            trainer.train_minibatch({x: xs, y: ys})
        if user:
            assert learner.calls == 3
        results.append([p.value.copy() for p in z.parameters])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_user_learner_without_update_fails_clearly():
    x = C.input_variable(2)
    z = C.layers.Dense(2)(x)

    class NoUpdate(C.learners.UserLearner):
        pass

    trainer = C.Trainer(z, C.reduce_sum(z), [NoUpdate(z.parameters, C.learning_parameter_schedule(0.1))])
    with pytest.raises(NotImplementedError, match="update"):
        trainer.train_minibatch({x: np.ones((1, 2), np.float32)})
