"""cntk.train.distributed: CNTK's distributed training over MPI (ctk.distributed)."""
from ctk.distributed import *  # noqa: F401,F403
from ctk.distributed import __all__  # noqa: F401
