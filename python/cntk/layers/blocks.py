"""cntk.layers.blocks: the recurrent cells and identity, Stabilizer."""
from ctk.layers import (identity, Stabilizer, LSTM, GRU, RNNStep, ForwardDeclaration)  # noqa: F401
from ctk.function_api import BlockFunction  # noqa: F401  (CNTK's blocks module imported it)

__all__ = ['identity', 'Stabilizer', 'LSTM', 'GRU', 'RNNStep', 'ForwardDeclaration', 'BlockFunction']
