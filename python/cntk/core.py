"""cntk.core: Value and NDArrayView."""
from ctk.core import *  # noqa: F401,F403
from ctk.core import __all__  # noqa: F401


def asarray(variable, value):
    """CNTK's core.asarray: a Value (or MinibatchData, or array) as NumPy data for `variable`."""
    return value.asarray() if hasattr(value, 'asarray') else value


def asvalue(variable, value):
    """CNTK's core.asvalue: NumPy data as a Value for `variable`."""
    from ctk._ctk import Value
    return value if isinstance(value, Value) else Value.create(variable, value)


__all__ = list(__all__) + ['asarray', 'asvalue']
