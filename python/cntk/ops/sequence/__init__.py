"""cntk.ops.sequence (also cntk.sequence): ops over sequences."""
from ctk.ops.sequence import *  # noqa: F401,F403
from ctk.ops.sequence import __all__  # noqa: F401
