"""cntk.cntk_py: the low-level functions CNTK scripts call directly."""
from ctk.cntk_py import *  # noqa: F401,F403
from ctk.cntk_py import __all__  # noqa: F401
