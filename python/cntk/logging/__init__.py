"""cntk.logging: progress writers, graph walks, trace levels."""
from ctk.logging import *  # noqa: F401,F403
from ctk.logging import __all__  # noqa: F401
from . import graph, progress_print  # noqa: E402,F401
