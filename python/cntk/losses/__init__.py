"""cntk.losses: the loss functions."""
from ctk.losses import *  # noqa: F401,F403
from ctk.losses import __all__  # noqa: F401
