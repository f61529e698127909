"""cntk.core: the data containers, Value (a minibatch with its sequence layout) and NDArrayView (a dense
tensor). Value.one_hot keeps class indices (CNTK's sparse one-hot input); general sparse (CSR) data is
not supported."""
from ._ctk import Value, NDArrayView  # noqa: F401

__all__ = ['Value', 'NDArrayView']
