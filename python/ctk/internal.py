"""cntk.internal: the helpers CNTK's layers library, user layers and CNTK-style tests import from
cntk.internal, cntk.internal.sanitize, cntk.internal.utils and cntk.internal.swig_helper. ctk's bindings
return Python objects directly, so typemap and map_if_possible pass values through; the sanitizers follow
CNTK's rules (numbers and arrays become float32 constants, shapes become tuples, ...)."""
import functools

import warnings

import numpy as np

from . import _ctk
from .typing import VariableType, python_function_arguments, required_positional_parameters


# ---- swig_helper ----

def typemap(f):
    """CNTK wrapped SWIG objects in their Python classes; ctk's are Python objects already."""
    return f


def map_if_possible(obj):
    """See typemap: nothing to map."""
    return obj


# ---- sanitize ----

def is_string(s):
    return isinstance(s, str)


def is_byte_buffer(s):
    return isinstance(s, (bytes, bytearray))


def _as_tuple(x):
    """(x,) for a scalar, tuple(x) for an iterable."""
    if np.isscalar(x):
        return (x,)
    return tuple(x)


def sanitize_shape(shape):
    return _as_tuple(shape)


def sanitize_precision(precision):
    """np.float32 or np.float64 from 'float'/'float32'/np.float32 or 'double'/'float64'/np.float64."""
    if precision in ('float', 'float32', np.float32):
        return np.float32
    if precision in ('double', 'float64', np.float64):
        return np.float64
    if precision is None:
        return None
    raise ValueError('precision value: "%s" is not supported' % (precision,))


def sanitize_dtype_numpy(dtype):
    # CNTK's rule: the string 'float' and integer types mean float32 ('double' float64); other dtypes
    # as NumPy reads them.
    if isinstance(dtype, str) and dtype in ('float', 'float32'):
        return np.float32
    if isinstance(dtype, str) and dtype == 'double':
        return np.float64
    if dtype is int or (hasattr(np.dtype(dtype), 'kind') and np.dtype(dtype).kind in 'iu'):
        return np.float32
    dtype = np.dtype(dtype).type
    if dtype in (np.float32, np.float64, np.float16):
        return dtype
    raise ValueError('data type "%s" is not supported' % (dtype,))


def sanitize_dtype_cntk(dtype):
    """ctk takes NumPy dtypes where CNTK took its DataType enum."""
    return None if dtype is None else sanitize_dtype_numpy(dtype)


def data_type_to_dtype(data_type):
    return np.dtype(data_type).type


def sanitize_input(arg, fallback_dtype=np.float32, reshape=None):
    """A Variable for an op operand: Variables and Functions as they are, numbers and arrays as constants
    of fallback_dtype (optionally reshaped); a type object is a ValueError, as in CNTK."""
    if isinstance(arg, (_ctk.Variable, _ctk.Function)):
        return arg
    if isinstance(arg, VariableType):
        raise ValueError("Input is a type object (%s). Did you mean to pass 'input(%s)'?" % (arg, arg))
    if isinstance(arg, list) and not arg:
        raise ValueError('input is empty')
    arr = np.asarray(arg, dtype=fallback_dtype)
    if reshape:
        arr = np.reshape(arr, reshape)
    return _ctk.constant(value=arr)


def sanitize_function(arg):
    """A Function: a Function as it is, an output Variable's owner."""
    if isinstance(arg, _ctk.Function):
        return arg
    if isinstance(arg, _ctk.Variable) and arg.is_output:
        return arg.owner
    raise TypeError("Object of type '%s' cannot be cast to Function" % type(arg).__name__)


def sanitize_variable_or_function(arg):
    if isinstance(arg, (_ctk.Variable, _ctk.Function)):
        return arg
    raise TypeError("Object of type '%s' is neither a Variable nor a Function" % type(arg).__name__)


def sanitize_variables_or_functions(arg):
    if isinstance(arg, (list, tuple)):
        return [sanitize_variable_or_function(a) for a in arg]
    return [sanitize_variable_or_function(arg)]


def sanitize_axis(axis):
    """An Axis from an Axis, an int (a static axis) or None (all static axes)."""
    if axis is None:
        return _ctk.Axis.all_static_axes()
    if isinstance(axis, _ctk.Axis):
        return axis
    if isinstance(axis, (int, np.integer)):
        return _ctk.Axis(int(axis))
    raise TypeError("axis must be an Axis, an int or None, not '%s'" % type(axis).__name__)


def sanitize_axis_list(axes):
    if not isinstance(axes, (list, tuple)):
        axes = [axes]
    return [sanitize_axis(a) for a in axes]


def sanitize_dynamic_axes(axes):
    """CNTK's helper: the axes as a tuple in CNTK's C++ order (reversed), each checked to be an Axis."""
    if not isinstance(axes, (list, tuple)):
        axes = [axes]
    for axis in axes:
        if not isinstance(axis, _ctk.Axis):
            raise TypeError('type Axis expected, got %s' % type(axis).__name__)
    return tuple(reversed(axes))


def sanitize_permutation(perm):
    """A permutation of 0..n-1 as a list; ValueError for anything else."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError('%s is not a permutation' % (perm,))
    return perm


def sanitize_variable_value_dict(var_value_dict):
    """The single value of a one-entry dict, else the dict (CNTK's rule for eval and grad results)."""
    if len(var_value_dict) == 1:
        return next(iter(var_value_dict.values()))
    return var_value_dict


def memoize(func):
    """Caches func's results by its (hashable) positional arguments."""
    return functools.lru_cache(maxsize=None)(func)


# ---- utils ----

def _value_as_sequence_or_array(val, var):
    """A Value as CNTK's Python returns it for var: a list of sequences with a sequence axis, else an
    array."""
    if len(var.dynamic_axes) > 1 and hasattr(val, 'as_sequences'):
        return val.as_sequences(var)
    return val.asarray() if hasattr(val, 'asarray') else val


def get_data_type(*args):
    """CNTK's rule for the type of an operation on `args`: the graph nodes' type when there is one (float64
    if any is), else the data's (float64 if any array or NumPy number is), else None (placeholders and
    untyped data only)."""
    node_types, data_types = set(), set()
    for a in args:
        if isinstance(a, (_ctk.Variable, _ctk.Function)):
            if isinstance(a, _ctk.Variable) and a.is_placeholder:
                continue
            node_types.add(np.dtype(a.dtype))
        elif a is not None:  # data: float64 arrays and numbers stay float64, anything else is float32
            dtype = getattr(a, 'dtype', None)
            data_types.add(np.dtype(np.float64 if dtype == np.float64 else np.float32))
    for types in (node_types, data_types):
        if types:
            return np.float64 if np.dtype(np.float64) in types else np.float32
    return None


def get_python_function_arguments(f):
    """(parameter names without defaults, annotations) of a Python function, as CNTK's helper."""
    _, annotations = python_function_arguments(f)
    return required_positional_parameters(f), annotations


def map_function_arguments(params, params_dict, *args, **kwargs):
    """{param: argument} for positional args (in order) and keyword args (looked up in params_dict by
    name); TypeError for an unknown keyword, SyntaxError for one given twice (CNTK's errors)."""
    arg_map = dict(zip(params, args))
    for name, arg in kwargs.items():
        if name not in params_dict:
            raise TypeError("got an unexpected keyword argument '%s'" % name)
        param = params_dict[name]
        if param in arg_map:
            raise SyntaxError("got multiple values for argument '%s'" % name)
        arg_map[param] = arg
    if len(arg_map) != len(params):
        raise TypeError('%d arguments given for %d parameters' % (len(arg_map), len(params)))
    return arg_map


def eval(op, arguments=None, precision=None, device=None, backward_pass=False, expected_backward=None):
    """CNTK's test helper: op's outputs for `arguments` ({output: value}) and, with backward_pass, the
    gradients of the sum of the outputs with respect to expected_backward (default: the arguments)."""
    state, forward_output = op.forward(arguments, op.outputs, op.outputs if backward_pass else None,
                                       device=device)
    if not backward_pass:
        return forward_output, None
    if expected_backward is None:
        expected_backward = arguments
    dtype = sanitize_precision(precision) if precision is not None else None
    root_gradients = {v: (np.ones_like(o, dtype=dtype) if not isinstance(o, list)
                          else [np.ones_like(s, dtype=dtype) for s in o]) for v, o in forward_output.items()}
    return forward_output, op.backward(state, root_gradients, expected_backward)


def sanitize_batch(var, batch, seq_starts=None, device=None):
    """CNTK's sanitize_batch: `batch` (NumPy data, a list of sequences, CSR matrices or a Value) as a Value
    for `var`, with the sequences' start flags. A Value given with seq_starts is a ValueError (its
    layout is already fixed)."""
    from ._ctk import Value
    if isinstance(batch, Value):
        if seq_starts is not None:
            raise ValueError('sanitize_batch: seq_starts cannot be applied to a Value (its layout is fixed)')
        return batch
    arrays = batch if isinstance(batch, (list, tuple)) else [batch]
    if any(isinstance(a, np.ndarray) and not a.flags.c_contiguous for a in arrays):
        # CNTK's warning: the data is copied into the Value's contiguous layout.
        warnings.warn('sanitize_batch: data that is not C-contiguous is copied', RuntimeWarning)
    return Value.create(var, batch, seq_starts=seq_starts, device=device)


def sanitize_value(shape, value, dtype, device):
    """CNTK's sanitize_value: `value` (a number, NumPy data or None for zeros) as an NDArrayView of `shape`."""
    from ._ctk import NDArrayView
    dtype = sanitize_dtype_numpy(dtype) if dtype is not None else np.float32
    if value is None:
        data = np.zeros(shape, dtype=dtype)
    elif np.isscalar(value):
        data = np.full(shape, value, dtype=dtype)
    else:
        data = np.ascontiguousarray(np.asarray(value, dtype=dtype))
    return NDArrayView.from_dense(data, device)


def _py_dict_to_cntk_dict(py_dict):
    """ctk's dictionaries are Python dicts: a copy."""
    return dict(py_dict)


__all__ = ['typemap', 'map_if_possible', 'is_string', 'is_byte_buffer', 'sanitize_shape', 'sanitize_precision',
           'sanitize_dtype_numpy', 'sanitize_dtype_cntk', 'data_type_to_dtype', 'sanitize_input', 'sanitize_function',
           'sanitize_variable_or_function', 'sanitize_variables_or_functions', 'sanitize_axis', 'sanitize_axis_list',
           'sanitize_dynamic_axes', 'sanitize_permutation', 'sanitize_variable_value_dict', 'memoize',
           'get_data_type', 'get_python_function_arguments', 'map_function_arguments', 'eval', 'sanitize_batch',
           'sanitize_value']


def _ones_like(batch, precision):
    """A batch like `batch` (a list of samples) with every value 1, in `precision` ('float' is float32,
    'double' float64): CNTK's helper for the gradients its tests expect."""
    dtype = sanitize_dtype_numpy(precision)
    return [np.ones_like(sample, dtype=dtype) for sample in batch]
