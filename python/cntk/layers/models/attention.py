"""cntk.layers.models.attention: CNTK's AttentionModel (implemented in ctk.attention)."""
from ctk.attention import AttentionModel  # noqa: F401

__all__ = ['AttentionModel']
