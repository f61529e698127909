"""cntk.eval: the Evaluator."""
from ctk.train import Evaluator  # noqa: F401
from . import evaluator  # noqa: F401

__all__ = ['Evaluator']
