"""cntk.train.training_session: training_session and its configurations."""
from ctk.train import (TrainingSession, training_session, CheckpointConfig, CrossValidationConfig,  # noqa: F401
                       TestConfig, DataUnit, minibatch_size_schedule)

__all__ = ['TrainingSession', 'training_session', 'CheckpointConfig', 'CrossValidationConfig', 'TestConfig',
           'DataUnit', 'minibatch_size_schedule']
