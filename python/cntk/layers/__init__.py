"""cntk.layers: the layers library (blocks, layers, higher-order layers, sequence layers), the type
objects of cntk.layers.typing and default_options. Layers are Functions with placeholders: apply one
with layer(x)."""
from .blocks import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .higher_order_layers import *  # noqa: F401,F403
from .sequence import *  # noqa: F401,F403
from .typing import *  # noqa: F401,F403
from . import blocks, layers, higher_order_layers, sequence, typing  # noqa: F401
from ctk.default_options import default_options, default_options_for  # noqa: F401
from ctk.variables import Parameter, Constant  # noqa: F401  (CNTK's blocks re-exported them)
from ctk._ctk import placeholder, Function  # noqa: F401
# CNTK's layers/sequence.py imported cntk.ops.sequence as `sequence`, and its star import rebound the
# package's `sequence` to it: after `from cntk.layers import *`, `sequence.input_variable` is the op
# module's (scripts and CNTK's tests rely on it). The layers stay importable as cntk.layers.sequence.
from ..ops import sequence  # noqa: E402,F401,F811
# CNTK's layer modules imported numpy and the ops they built on without an __all__, so `from cntk.layers
# import *` handed scripts those names too: CNTK's Sequence2Sequence.py calls splice() from it and its
# LanguageUnderstanding.py uses np without importing it.
import numpy as np  # noqa: E402,F401
from ..ops import splice  # noqa: E402,F401
# Likewise the ops and initializers its layer files imported (CNTK's trainer tests use them so).
from ..ops import combine, placeholder, input_variable  # noqa: E402,F401
from ..initializer import glorot_uniform, he_normal, normal, uniform  # noqa: E402,F401
