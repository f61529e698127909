"""cntk.logging: progress writers with CNTK's log lines."""
from ._ctk.logging import (ProgressPrinter, TensorBoardProgressWriter,  # noqa: F401
                           log_number_of_parameters)

from ._ctk.logging import ProgressWriter as _ProgressWriterBase


class ProgressWriter(_ProgressWriterBase):
    """CNTK's ProgressWriter base for writers written in Python: define any of on_write_training_update(
    samples, updates, aggregate_loss, aggregate_metric), on_write_test_update(samples, updates,
    aggregate_metric), on_write_training_summary(samples, updates, summaries, aggregate_loss,
    aggregate_metric, elapsed_milliseconds), on_write_test_summary(samples, updates, summaries,
    aggregate_metric, elapsed_milliseconds) and write(key, value). Ranges and sums are (start, end)
    tuples; aggregate_metric is None without a metric. freq/first (test_freq/test_first) say which
    updates are written, as for ProgressPrinter."""

    def __init__(self, freq=None, first=0, tag='', log_to_file=None, rank=None, gen_heartbeat=False,
                 num_epochs=None, test_freq=None, test_first=0, metric_is_pct=True, distributed_freq=None,
                 distributed_first=0):
        super().__init__(freq, first, test_freq, test_first)
        self.tag, self.log_to_file, self.rank, self.num_epochs = tag, log_to_file, rank, num_epochs
        self.metric_is_pct = metric_is_pct
        self._keep_python_object(self)


__all__ = ['ProgressWriter', 'ProgressPrinter', 'TensorBoardProgressWriter', 'log_number_of_parameters']
