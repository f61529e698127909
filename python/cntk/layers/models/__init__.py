"""cntk.layers.models: CNTK's model library (AttentionModel)."""
from .attention import *  # noqa: F401,F403
from . import attention  # noqa: F401
