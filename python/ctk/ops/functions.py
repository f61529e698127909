"""cntk.ops.functions: Function, load_model and the model formats."""
from .._ctk import Function, CloneMethod, ModelFormat, BackPropState, load_model  # noqa: F401

__all__ = ['Function', 'CloneMethod', 'ModelFormat', 'BackPropState', 'load_model']
