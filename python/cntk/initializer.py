"""cntk.initializer: parameter initializers."""
from ctk.initializer import *  # noqa: F401,F403
from ctk.initializer import __all__  # noqa: F401
