"""cntk.eval.evaluator: the Evaluator."""
from ctk.train import Evaluator  # noqa: F401

__all__ = ['Evaluator']
