"""cntk.layers.higher_order_layers: layers made of layers."""
from ctk.layers import (Sequential, For, SequentialClique, ResNetBlock)  # noqa: F401

__all__ = ['Sequential', 'For', 'SequentialClique', 'ResNetBlock']
