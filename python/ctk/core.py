"""cntk.core: the data containers, Value (a minibatch with its sequence layout) and NDArrayView (a dense
tensor). ctk keeps no sparse storage: Value.one_hot and sparse streams hold dense one-hot rows."""
from ._ctk import Value, NDArrayView  # noqa: F401

__all__ = ['Value', 'NDArrayView']
