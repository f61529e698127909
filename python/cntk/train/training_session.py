"""cntk.train.training_session: training_session and its configurations."""
import sys  # noqa: F401  (exported below)

from ctk.train import (TrainingSession, training_session, CheckpointConfig, CrossValidationConfig,  # noqa: F401
                       TestConfig, DataUnit, minibatch_size_schedule)

# CNTK's module had no __all__, so `from cntk.train.training_session import *` also gave a script the
# modules it imported: CNTK's distributed CIFAR-10 examples use `sys` without importing it.
__all__ = ['TrainingSession', 'training_session', 'CheckpointConfig', 'CrossValidationConfig', 'TestConfig',
           'DataUnit', 'minibatch_size_schedule', 'sys']
