"""cntk.logging: progress writers with CNTK's log lines."""
from ._ctk.logging import ProgressWriter, ProgressPrinter, log_number_of_parameters  # noqa: F401

__all__ = ['ProgressWriter', 'ProgressPrinter', 'log_number_of_parameters']
