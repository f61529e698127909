"""cntk.random: random sampling ops."""
from ctk.random import *  # noqa: F401,F403
from ctk.random import __all__  # noqa: F401
