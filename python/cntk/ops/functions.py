"""cntk.ops.functions: Function, load_model, UserFunction."""
from ctk.ops.functions import *  # noqa: F401,F403
from ctk.ops.functions import __all__  # noqa: F401
from ctk.function_api import BlockFunction  # noqa: F401

# CNTK's functions.py imported cntk_py at module level; `from cntk.ops.functions import *` handed it on.
from .. import cntk_py  # noqa: E402,F401

__all__ = list(__all__) + ['BlockFunction', 'cntk_py']
