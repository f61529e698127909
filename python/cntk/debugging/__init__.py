"""cntk.debugging: deterministic algorithms, checked mode, node timing, the profiler."""
from ctk.debugging import *  # noqa: F401,F403
from ctk.debugging import __all__  # noqa: F401
from . import debug, profiler  # noqa: E402,F401
