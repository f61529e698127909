"""cntk.ops: every graph op, the variable factories, combine and as_block."""
from ctk.ops import *  # noqa: F401,F403
from ctk.ops import __all__  # noqa: F401
from . import functions, sequence  # noqa: E402,F401
