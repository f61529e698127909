"""cntk.learners: training-parameter schedules and learners, with CNTK 2.7's argument names."""
import enum

from ._ctk.learners import *  # noqa: F401,F403
from ._ctk.learners import (Learner, TrainingParameterSchedule, IGNORE,  # noqa: F401
                            learning_parameter_schedule, learning_parameter_schedule_per_sample,
                            momentum_schedule, momentum_schedule_per_sample,
                            momentum_as_time_constant_schedule, set_default_unit_gain_value,
                            default_unit_gain_value, sgd, momentum_sgd, nesterov, adagrad, fsadagrad, adam,
                            rmsprop, adadelta, universal)
from ._ctk.learners import UserLearner as _UserLearnerBase


class UserLearner(_UserLearnerBase):
    """CNTK's UserLearner: subclass it and define update(gradient_values, training_sample_count,
    sweep_end), which gets {parameter: gradient} (NumPy arrays unless as_numpy=False), sets the
    parameters' values itself and returns False once learning has stopped."""

    def __init__(self, parameters, lr_schedule, as_numpy=True):
        super().__init__(list(parameters), lr_schedule, as_numpy)
        self._keep_python_object(self)


class UnitType(enum.Enum):
    """CNTK's deprecated unit of a learning rate: per minibatch or per sample."""
    minibatch = 'minibatch'
    sample = 'sample'


def training_parameter_schedule(schedule, unit=UnitType.minibatch, epoch_size=None):
    """CNTK's deprecated training_parameter_schedule: per-minibatch (default) or per-sample values; the
    unit is a UnitType or its name."""
    if isinstance(unit, str) and unit in UnitType.__members__:
        unit = UnitType[unit]
    if unit not in (UnitType.sample, UnitType.minibatch):
        raise ValueError('training_parameter_schedule: unit %r is not UnitType.sample or UnitType.minibatch'
                         % (unit,))
    if unit == UnitType.sample:
        return learning_parameter_schedule_per_sample(schedule, epoch_size=epoch_size)
    return learning_parameter_schedule(schedule, epoch_size=epoch_size)


def learning_rate_schedule(lr, unit, epoch_size=None):
    """CNTK's deprecated learning_rate_schedule: a per-sample or per-minibatch rate schedule."""
    if unit == UnitType.sample:
        return learning_parameter_schedule_per_sample(lr, epoch_size=epoch_size)
    return learning_parameter_schedule(lr, epoch_size=epoch_size)


__all__ = ['Learner', 'UserLearner', 'TrainingParameterSchedule', 'UnitType', 'IGNORE', 'learning_rate_schedule',
           'training_parameter_schedule',
           'learning_parameter_schedule', 'learning_parameter_schedule_per_sample', 'momentum_schedule',
           'momentum_schedule_per_sample', 'momentum_as_time_constant_schedule',
           'set_default_unit_gain_value', 'default_unit_gain_value', 'sgd', 'momentum_sgd', 'nesterov',
           'adagrad', 'fsadagrad', 'adam', 'rmsprop', 'adadelta', 'universal']
