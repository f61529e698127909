"""cntk.default_options: scoped defaults for layer arguments."""
from ctk.default_options import *  # noqa: F401,F403
from ctk.default_options import __all__  # noqa: F401
