"""cntk: CNTK 2.7's Python package over ctk, laid out as CNTK's (cntk.ops, cntk.ops.functions,
cntk.ops.sequence, cntk.layers with blocks/layers/higher_order_layers/sequence/typing, cntk.io with
transforms, cntk.train with trainer/training_session/distributed, cntk.eval, cntk.learners, cntk.losses,
cntk.metrics, cntk.logging with graph/progress_print, cntk.debugging, cntk.default_options, cntk.variables,
cntk.axis, cntk.core, cntk.device, cntk.initializer, cntk.random, cntk.tensor, cntk.internal, cntk.cntk_py),
so that `import cntk as C`, `import cntk.x.y` and `from cntk.x import *` run CNTK scripts unchanged. Each
module re-exports ctk's implementation.

__version__ is the CNTK API level these modules follow (2.7); __ctk_version__ is ctk's own version."""
import numpy as _np

import ctk as _ctk_package
from ctk import __version__ as __ctk_version__  # noqa: F401

__version__ = '2.7'

from . import cntk_py  # noqa: E402,F401
from .core import *  # noqa: E402,F401,F403
from .variables import Parameter, Constant, Record  # noqa: E402,F401
from .ops import *  # noqa: E402,F401,F403
from .device import *  # noqa: E402,F401,F403
from .train import *  # noqa: E402,F401,F403
from .train.distributed import *  # noqa: E402,F401,F403  (CNTK's C.Communicator, C.data_parallel_...)
from .eval import *  # noqa: E402,F401,F403
from .learners import *  # noqa: E402,F401,F403
from .losses import *  # noqa: E402,F401,F403
from .metrics import *  # noqa: E402,F401,F403
from .initializer import *  # noqa: E402,F401,F403
from . import (axis, core, debugging, device, eval, initializer, internal, io, layers,  # noqa: E402,F401
               learners, logging, losses, metrics, ops, random, tensor, train, variables)
from .ops import sequence  # noqa: E402,F401
# CNTK's `from .train import *` also copied the submodules it names: C.trainer, C.distributed.
from .train import trainer, distributed  # noqa: E402,F401
from ctk._ctk import Value, NDArrayView, set_fixed_random_seed, set_num_threads, num_threads  # noqa: E402,F401
from ctk.function_api import BlockFunction  # noqa: E402,F401
# The module cntk.default_options is imported by path; the name is the context manager, as in CNTK.
from .default_options import *  # noqa: E402,F401,F403

DATATYPE = _np.float32
InferredDimension = cntk_py.InferredDimension
FreeDimension = cntk_py.FreeDimension

# `cntk.sequence` is CNTK's other path to cntk.ops.sequence.
import sys as _sys  # noqa: E402
_sys.modules[__name__ + '.sequence'] = sequence
del _sys
