"""ctk: CNTK 2.7's Python API over ctk's C++ library.

The namespaces follow CNTK's: ``ctk.ops`` (and the ops at the top level), ``ctk.layers``,
``ctk.learners``, ``ctk.losses``, ``ctk.metrics``, ``ctk.initializer``, ``ctk.io``, ``ctk.train``,
``ctk.logging``. Everything is a thin layer over the ``_ctk`` extension; the package ``cntk`` re-exports
this one under CNTK's module paths.
"""
from ._ctk import __version__
from . import (ops, layers, learners, losses, metrics, initializer, io, train, logging, cntk_py, device,
               random, debugging, core, variables, distributed)
from .variables import Parameter, Constant  # noqa: F401
from .device import (cpu, gpu, all_devices, use_default_device, try_set_default_device,  # noqa: F401
                     DeviceDescriptor)
from .ops import *  # noqa: F401,F403  (CNTK's top level holds every op)
from .ops import sequence
from .learners import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403
from .metrics import *  # noqa: F401,F403
from .initializer import *  # noqa: F401,F403
from .train import *  # noqa: F401,F403
from ._ctk import Value, NDArrayView, set_fixed_random_seed, set_num_threads, num_threads  # noqa: F401
from . import typing, function_api
function_api.install()
from .function_api import BlockFunction  # noqa: F401
import sys as _sys
_sys.modules[__name__ + '.train.training_session'] = train  # CNTK: from cntk.train.training_session import *
