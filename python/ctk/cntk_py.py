"""cntk.cntk_py (and the top-level module _cntk_py): the low-level functions CNTK scripts and CNTK's own
test configuration call directly, over ctk's equivalents. Switches for CNTK internals that ctk does not
have (CPU-eval optimization, forward-value sharing, GPU allocation traces) are accepted and change
nothing; each says so in its docstring."""
import sys

from . import _ctk
from ._ctk import set_fixed_random_seed, constant_initializer, Value, NDArrayView  # noqa: F401
from ._ctk.learners import universal_learner  # noqa: F401
from .debugging import (force_deterministic_algorithms, set_computation_network_trace_level,  # noqa: F401
                        set_checked_mode, get_checked_mode)
from .debugging import deterministic_algorithms_forced as should_force_deterministic_algorithms  # noqa: F401
from .logging import ProgressWriter as _PythonProgressWriter
from .io_config import MinibatchSourceConfig, to_dictionary, create_composite_minibatch_source  # noqa: F401

# CNTK's special dimensions: inferred from the first input (InferredDimension) or free per minibatch.
InferredDimension = -1
FreeDimension = -3

# CNTK's DataType enum as its SWIG layer named it: ctk takes and gives NumPy dtypes where CNTK took these
# (sanitize_dtype_cntk returns them). ctk has no integer-typed parameters (CNTK 2.7's Int8/Int16).
import numpy as _np  # noqa: E402
DataType_Float = _np.float32
DataType_Double = _np.float64
DataType_Float16 = _np.float16

# CNTK's DeviceKind enum values as its SWIG layer named them.
from .device import DeviceKind as _DeviceKind  # noqa: E402
DeviceKind_CPU = _DeviceKind.CPU
DeviceKind_GPU = _DeviceKind.GPU


class ProgressWriter(_PythonProgressWriter):
    """CNTK's SWIG base class of progress writers, constructed as CNTK's C++ ProgressWriter was: the
    training, test and distributed-sync update frequencies and how many first updates each writes."""

    def __init__(self, training_update_write_freq=0, training_first_updates_to_write=0,
                 test_update_write_freq=0, test_first_updates_to_write=0, distributed_sync_update_write_freq=0,
                 distributed_sync_first_updates_to_write=0):
        super().__init__(freq=training_update_write_freq or None, first=training_first_updates_to_write,
                         test_freq=test_update_write_freq or None, test_first=test_first_updates_to_write,
                         distributed_freq=distributed_sync_update_write_freq or None,
                         distributed_first=distributed_sync_first_updates_to_write)

    def __disown__(self):
        """SWIG's hand-over of the object to C++; ctk keeps a writer alive as long as its trainer."""
        return self


def reset_random_seed(value):
    """Initializers and random ops created without a seed get seeds value, value + 1, ... from now on,
    and a fixed seed is no longer fixed (CNTK's conftest calls it before each test so that results do not
    depend on test order)."""
    _ctk.reset_random_seed(int(value))


def set_max_num_cpu_threads(num_threads):
    """The threads of ctk's CPU kernels (oneDNN, OpenBLAS, ctk's own loops)."""
    _ctk.set_num_threads(int(num_threads))


def get_max_num_cpu_threads():
    return _ctk.num_threads()


def set_trace_level(level):
    from .logging import set_trace_level as _set
    _set(level)


class Dictionary(dict):
    """CNTK's Dictionary as its SWIG layer exposed it: string keys and Python values (ctk's
    configuration records are Python dicts; this is one, for code that makes a cntk_py.Dictionary)."""


def allow_renaming_functions():
    """Lets a Function that has a name be given another (CNTK allowed a name to be set once unless
    this was called)."""
    _ctk._allow_renaming_functions()


def get_trace_level():
    from .logging import get_trace_level as _get
    return _get()


def always_allow_setting_default_device():
    """CNTK let a process change its default device after first use only after this call; ctk always
    lets it. Nothing to do."""


def enable_synchronous_gpukernel_execution():
    """Makes every GPU kernel launch synchronous (for debugging), as CUDA_LAUNCH_BLOCKING=1. ctk reads
    CUDA_LAUNCH_BLOCKING when CUDA starts; set it in the environment before the first GPU call."""
    import os
    os.environ['CUDA_LAUNCH_BLOCKING'] = '1'


def disable_forward_values_sharing():
    """CNTK's switch off its reuse of forward-value buffers. ctk's executor frees values by liveness and
    never aliases two live values: nothing to do."""


def enable_cpueval_optimization():
    """CNTK's fused CPU evaluation path (2.5+). ctk's CPU kernels have one path: nothing to do."""


def disable_cpueval_optimization():
    """See enable_cpueval_optimization: nothing to do."""


def set_gpumemory_allocation_trace_level(level):
    """CNTK's trace of GPU allocations. ctk's allocator reports its statistics through ctk.device instead;
    a level above 0 notes that on stderr."""
    if int(level) > 0:
        print('ctk: set_gpumemory_allocation_trace_level: ctk prints no allocation trace; see '
              'ctk.device memory statistics', file=sys.stderr)


__all__ = ['Dictionary', 'allow_renaming_functions', 'MinibatchSourceConfig', 'to_dictionary', 'create_composite_minibatch_source', 'set_fixed_random_seed', 'reset_random_seed', 'force_deterministic_algorithms',
           'should_force_deterministic_algorithms', 'ProgressWriter',
           'set_computation_network_trace_level', 'set_checked_mode', 'get_checked_mode', 'set_max_num_cpu_threads',
           'get_max_num_cpu_threads', 'set_trace_level', 'get_trace_level', 'always_allow_setting_default_device',
           'enable_synchronous_gpukernel_execution', 'disable_forward_values_sharing', 'enable_cpueval_optimization',
           'disable_cpueval_optimization', 'set_gpumemory_allocation_trace_level', 'constant_initializer',
           'InferredDimension',
           'FreeDimension', 'Value', 'NDArrayView', 'universal_learner', 'DataType_Float', 'DataType_Double',
           'DataType_Float16', 'DeviceKind_CPU', 'DeviceKind_GPU']
