"""cntk.io: readers and minibatch sources."""
from ctk.io import *  # noqa: F401,F403
from ctk.io import __all__  # noqa: F401
from ctk.io import _is_tensor  # noqa: F401  (CNTK's tests import it)
from . import transforms  # noqa: E402,F401
