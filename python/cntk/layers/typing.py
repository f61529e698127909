"""cntk.layers.typing: type objects for Function signatures."""
from ctk.typing import *  # noqa: F401,F403
from ctk.typing import __all__  # noqa: F401
