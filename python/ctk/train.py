"""cntk.train: Trainer, Evaluator and training_session with its configurations."""
from ._ctk.train import (Trainer, Evaluator, TrainingSession, training_session, CheckpointConfig,  # noqa: F401
                         CrossValidationConfig, TestConfig, DataUnit)

__all__ = ['Trainer', 'Evaluator', 'TrainingSession', 'training_session', 'CheckpointConfig',
           'CrossValidationConfig', 'TestConfig', 'DataUnit']


def minibatch_size_schedule(schedule, epoch_size=1):
    """CNTK's minibatch_size_schedule. ctk's training_session takes a fixed minibatch size, so only a
    constant schedule is accepted; it is returned as that size."""
    if isinstance(schedule, int):
        return schedule
    raise NotImplementedError('minibatch_size_schedule: ctk supports a constant minibatch size only')


__all__.append('minibatch_size_schedule')
