"""cntk.metrics: evaluation criteria."""
from ._ctk import classification_error  # noqa: F401

__all__ = ['classification_error']
