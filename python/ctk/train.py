"""cntk.train: Trainer, Evaluator and training_session with its configurations."""
from ._ctk.train import (Trainer, Evaluator, TrainingSession, training_session, CheckpointConfig,  # noqa: F401
                         CrossValidationConfig, TestConfig, DataUnit)

__all__ = ['Trainer', 'Evaluator', 'TrainingSession', 'training_session', 'CheckpointConfig',
           'CrossValidationConfig', 'TestConfig', 'DataUnit']


def minibatch_size_schedule(schedule, epoch_size=1):
    """CNTK's minibatch_size_schedule: a number, a list of sizes, or [(count, size), ...] with each entry
    lasting count * epoch_size samples (the last one forever); training_session's mb_size takes it."""
    from .learners import learning_parameter_schedule
    if isinstance(schedule, int):
        schedule = [schedule]
    return learning_parameter_schedule(schedule, epoch_size=epoch_size)


__all__.append('minibatch_size_schedule')


def _print_node_timing(self):
    """CNTK's Trainer.print_node_timing: the time per op since cntk.debugging.set_node_timing(True)."""
    from .debugging import print_node_timing
    print_node_timing()


Trainer.print_node_timing = _print_node_timing


def _get_loss_metric(criterion):
    """CNTK's Trainer._get_loss_metric, which its examples call to build an evaluator: the (loss, metric)
    pair a criterion stands for, a two-output Function or a tuple, each output as a Function (the metric
    None when there is only a loss)."""
    from ._ctk import Function, Variable, combine
    parts = tuple(criterion.outputs) if isinstance(criterion, Function) else tuple(criterion)
    if not 1 <= len(parts) <= 2:
        raise ValueError('criterion must be a loss, or a loss and a metric (got %d parts)' % len(parts))
    parts = tuple(combine([p], name=p.name) if isinstance(p, Variable) else p for p in parts)
    return parts if len(parts) == 2 else parts + (None,)


Trainer._get_loss_metric = staticmethod(_get_loss_metric)
