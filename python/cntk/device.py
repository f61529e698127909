"""cntk.device: devices and the default device."""
from ctk.device import *  # noqa: F401,F403
from ctk.device import __all__  # noqa: F401
