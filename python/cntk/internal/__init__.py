"""cntk.internal: helpers CNTK's layers and user layers import (typemap, sanitize_input, _as_tuple,
...)."""
from ctk.internal import *  # noqa: F401,F403
from ctk.internal import __all__, _as_tuple, _value_as_sequence_or_array  # noqa: F401
from . import sanitize, utils, swig_helper  # noqa: E402,F401
