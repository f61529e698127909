"""cntk.variables: Variable, Parameter, Constant and Record."""
from ctk.variables import *  # noqa: F401,F403
from ctk.variables import __all__  # noqa: F401
from ctk.typing import VariableType  # noqa: F401
# CNTK's variables.py imported sanitize_value without an __all__: `from cntk.variables import *` gave it.
from ctk.internal import sanitize_value  # noqa: F401

__all__ = list(__all__) + ['sanitize_value']
