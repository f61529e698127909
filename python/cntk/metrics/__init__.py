"""cntk.metrics: the evaluation metrics."""
from ctk.metrics import *  # noqa: F401,F403
from ctk.metrics import __all__  # noqa: F401
