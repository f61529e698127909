"""cntk.ops: every graph op, the variable factories (input_variable, parameter, constant, placeholder),
combine, as_block, Axis, Variable and Function."""
from .. import _ctk

_NOT_OPS = {'layers', 'learners', 'io', 'logging', 'train', 'sequence', 'Value', 'Initializer', 'uniform',
            'DeviceDescriptor',
            'normal', 'truncated_normal', 'xavier', 'glorot_uniform', 'glorot_normal', 'he_uniform',
            'he_normal', 'bilinear', 'set_fixed_random_seed', 'sequence_input_variable',
            'SentinelValueForInferParamInitRank', 'SentinelValueForAutoSelectRandomSeed', 'set_num_threads',
            'constant_initializer',
            'num_threads', 'random', 'NDArrayView'}
__all__ = [n for n in dir(_ctk) if not n.startswith('_') and n not in _NOT_OPS]
globals().update({n: getattr(_ctk, n) for n in __all__})

from . import sequence, functions  # noqa: E402


def _associative_multi_arg(binary):
    """CNTK's associative_multi_arg: op(a, b, c, ...) as a balanced tree of the binary op (only the
    outermost Function takes the name; a trailing string argument is the name)."""
    def op(arg1, arg2, *more_args, **kwargs):
        args = [arg1, arg2] + list(more_args)
        name = kwargs.pop('name', None)
        if name is None:
            name = args.pop() if len(args) > 2 and isinstance(args[-1], str) else ''

        def tree(items):
            if len(items) == 1:
                return items[0]
            return binary(tree(items[:len(items) // 2]), tree(items[len(items) // 2:]))
        if len(args) == 2:
            return binary(args[0], args[1], name=name)
        return binary(tree(args[:len(args) // 2]), tree(args[len(args) // 2:]), name=name)
    op.__name__ = binary.__name__
    op.__doc__ = binary.__doc__
    return op


for _name in ('plus', 'element_times', 'element_max', 'element_min', 'log_add_exp'):
    globals()[_name] = _associative_multi_arg(getattr(_ctk, _name))


def as_composite(root_function, name=''):
    """CNTK's as_composite: root_function as a composite Function (combine of its outputs)."""
    return _ctk.combine(list(root_function.outputs), name=name)


__all__ += ['as_composite']

from .functions import UserFunction, user_function, output_variable  # noqa: E402,F401
__all__ += ['UserFunction', 'user_function', 'output_variable']


def input_variable(shape, dtype=None, needs_gradient=False, is_sparse=False, dynamic_axes=None, name=''):
    """CNTK's input_variable: an input of the given sample shape (or a type, e.g. Tensor[13] or
    Sequence[Tensor[13]], whose record fills the other arguments), with the batch axis (dynamic_axes:
    others)."""
    from ..typing import VariableType
    if isinstance(shape, VariableType):
        t = shape
        shape = t.shape if t.shape is not None else (-1,)
        dtype = dtype if dtype is not None else t.dtype
        needs_gradient = needs_gradient or bool(t.needs_gradient)
        is_sparse = is_sparse or bool(t.is_sparse)
        dynamic_axes = dynamic_axes if dynamic_axes is not None else t.dynamic_axes
    return _ctk.input_variable(shape, dtype=dtype, needs_gradient=needs_gradient, is_sparse=is_sparse,
                              dynamic_axes=dynamic_axes, name=name)


def input(shape, dtype=None, needs_gradient=False, is_sparse=False, dynamic_axes=None, name=''):
    """CNTK's deprecated name of input_variable (still in CNTK 2.7's cntk.ops)."""
    return input_variable(shape, dtype, needs_gradient, is_sparse, dynamic_axes, name)


__all__ += ['input']


def _operand_list(args):
    """CNTK's n-ary ops take the operands as arguments or as one list."""
    return list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)


def sum(*operands, name=''):  # noqa: A001 (CNTK's name)
    """CNTK's sum: the element-wise sum of the operands (given as arguments or as one list)."""
    return _ctk.sum(*_operand_list(operands), name=name)


def clip(x, min_value, max_value, name=''):
    """CNTK's clip: x bounded by min_value and max_value, numbers or tensors (element-wise bounds)."""
    import numbers
    if isinstance(min_value, numbers.Number) and isinstance(max_value, numbers.Number):
        return _ctk.clip(x, float(min_value), float(max_value), name=name)
    # NumPy's order: the upper bound applied last (a min above the max gives the max, as in CNTK's tests).
    return _ctk.element_min(_ctk.element_max(x, min_value), max_value, name=name)


def softplus(x, steepness=1, name=''):
    """CNTK's softplus: log(1 + exp(steepness * x)) / steepness."""
    if steepness == 1:
        return _ctk.softplus(x, name=name)
    s = float(steepness)
    return _ctk.element_divide(_ctk.softplus(_ctk.element_times(x, s)), s, name=name)


# CNTK 2.x also kept the delays at the top of cntk.ops, and a star import of cntk.ops handed scripts the
# `sequence` module (its ops package had no __all__).
past_value = sequence.past_value
future_value = sequence.future_value
__all__ += ['past_value', 'future_value', 'sequence']
# CNTK's ops module imported Parameter and Constant from cntk.variables (its own tests use them so).
from ..variables import Parameter, Constant  # noqa: E402,F401
__all__ += ['Parameter', 'Constant']
