"""cntk.layers.blocks: the recurrent cells and identity, Stabilizer."""
from ctk.layers import (identity, Stabilizer, LSTM, GRU, RNNStep, ForwardDeclaration)  # noqa: F401

__all__ = ['identity', 'Stabilizer', 'LSTM', 'GRU', 'RNNStep', 'ForwardDeclaration']
