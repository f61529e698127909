"""cntk.logging: progress writers with CNTK's log lines."""
from ._ctk.logging import (ProgressWriter, ProgressPrinter, TensorBoardProgressWriter,  # noqa: F401
                           log_number_of_parameters)

__all__ = ['ProgressWriter', 'ProgressPrinter', 'TensorBoardProgressWriter', 'log_number_of_parameters']
