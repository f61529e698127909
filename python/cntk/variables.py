"""cntk.variables: Variable, Parameter, Constant and Record."""
from ctk.variables import *  # noqa: F401,F403
from ctk.variables import __all__  # noqa: F401
from ctk.typing import VariableType  # noqa: F401
