"""cntk.train.trainer: the Trainer."""
from ctk.train import Trainer  # noqa: F401

__all__ = ['Trainer']
