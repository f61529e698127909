"""cntk.logging.progress_print: the progress writers."""
from ctk.logging import ProgressWriter, ProgressPrinter, TensorBoardProgressWriter, log_number_of_parameters  # noqa: F401

__all__ = ['ProgressWriter', 'ProgressPrinter', 'TensorBoardProgressWriter', 'log_number_of_parameters']
