"""cntk.layers.typing: CNTK's type objects for Function signatures.

``Tensor[13, 42]`` is the type of a data input (a batch of [13, 42] samples), ``SparseTensor[9000]`` a
sparse one, ``ParameterTensor[512, 256]`` one without dynamic axes, ``Sequence[Tensor[300]]`` a sequence
of samples over the default sequence axis and ``SequenceOver[axis][Tensor[300]]`` over another one.
``tensor`` is a data input whose shape is inferred. A type is a record (shape, dtype, is_sparse,
dynamic_axes, needs_gradient) that ``input_variable(**t)`` or ``C.input(t)`` turns into an input, and that
``@Function.with_signature(...)``, ``@Signature(...)`` and ``Function.update_signature(...)`` use to type a
Function's arguments. Printed as CNTK prints types: ``Tensor[13,42]``, ``SequenceOver[inputAxis][Tensor[128]]``.
"""
import inspect

import numpy as np

from ._ctk import Axis, Variable

# A dimension CNTK leaves to inference (cntk.InferredDimension); `tensor` uses it for its shape.
_INFERRED = -1


class VariableType(dict):
    """The type of a Variable: a dict with attribute access (CNTK's Variable._Type)."""

    def __init__(self, shape=None, dtype=None, needs_gradient=None, is_sparse=None, dynamic_axes=None):
        if shape is not None and not isinstance(shape, (tuple, list)):
            shape = (shape,)
        super().__init__()
        for key, value in (('shape', None if shape is None else tuple(int(d) for d in shape)),
                           ('dtype', dtype), ('needs_gradient', needs_gradient), ('is_sparse', is_sparse),
                           ('dynamic_axes', None if dynamic_axes is None else list(dynamic_axes))):
            if value is not None:
                self[key] = value

    def __getattr__(self, name):
        if name in ('shape', 'dtype', 'needs_gradient', 'is_sparse', 'dynamic_axes'):
            return self.get(name)
        raise AttributeError(name)

    def __call__(self, *args, **kwargs):
        raise TypeError("abstract type %s cannot be instantiated; use 'input(**%s)' instead" % (self, self))

    def updated_with(self, **kwargs):
        d = dict(self)
        d.update(kwargs)
        return VariableType(**d)

    @property
    def is_inferred(self):
        return self.shape is None or any(d == _INFERRED for d in self.shape)

    def __str__(self):
        shape = self.shape
        if shape is None or any(d == _INFERRED for d in shape):
            inner = 'tensor'
        else:
            kind = 'SparseTensor' if self.is_sparse else \
                'ParameterTensor' if self.dynamic_axes == [] else 'Tensor'
            inner = '%s[%s]' % (kind, ','.join(str(d) for d in shape))
        axes = [a for a in (self.dynamic_axes or []) if a.name != Axis.default_batch_axis().name]
        if not axes:
            return inner
        if len(axes) == 1 and axes[0].name == Axis.default_dynamic_axis().name:
            return 'Sequence[%s]' % inner
        return ''.join('SequenceOver[%s]' % a.name for a in axes) + '[%s]' % inner

    __repr__ = __str__


def sanitize_type(t):
    """A VariableType from what a signature may hold: a type, a bare shape (an int or tuple: Tensor[shape]),
    a scalar type (float, np.float32, np.float64: a scalar of that dtype) or None (left as is)."""
    if t is None or isinstance(t, VariableType):
        return t
    if isinstance(t, (int, tuple, list)):  # a bare shape: a data tensor of that sample shape
        return Tensor[tuple(t) if isinstance(t, (tuple, list)) else (t,)]
    if t in (float, np.float32, np.float64):
        return VariableType(shape=(), dtype=np.float64 if t is np.float64 else np.float32,
                            dynamic_axes=[Axis.default_batch_axis()])
    raise TypeError('%r is not a CNTK type: use Tensor[...], Sequence[...], float, np.float32 or np.float64' % (t,))


class _TensorMeta(type):
    def __getitem__(cls, shape):
        if not isinstance(shape, tuple):
            shape = (shape,)
        kwargs = dict(cls._kwargs)
        # The first entry may be a dtype (CNTK: Tensor[np.float64, 13]).
        if shape and (shape[0] is np.float32 or shape[0] is np.float64):
            kwargs['dtype'] = shape[0]
            shape = shape[1:]
        return VariableType(shape, **kwargs)


def _tensor_type(name, **kwargs):
    return _TensorMeta(name, (), {'_kwargs': kwargs})


Tensor = _tensor_type('Tensor', is_sparse=False, dynamic_axes=[Axis.default_batch_axis()])
SparseTensor = _tensor_type('SparseTensor', is_sparse=True, dynamic_axes=[Axis.default_batch_axis()])
ParameterTensor = _tensor_type('ParameterTensor', is_sparse=False, dynamic_axes=[])
tensor = Tensor[_INFERRED]


class _SequenceMeta(type):
    def __getitem__(cls, item_type):
        item_type = sanitize_type(item_type)
        axes = item_type.dynamic_axes
        if axes and [a.name for a in axes] != [Axis.default_batch_axis().name]:
            raise TypeError('sequences over sequences are currently not supported')
        return item_type.updated_with(dynamic_axes=list(cls._axes))


def _sequence_type(name, axes):
    return _SequenceMeta(name, (), {'_axes': axes})


Sequence = _sequence_type('Sequence', [Axis.default_batch_axis(), Axis.default_dynamic_axis()])


class _SequenceOverMeta(type):
    def __getitem__(cls, axis):
        return _sequence_type('Sequence', [Axis.default_batch_axis(), axis])


SequenceOver = _SequenceOverMeta('SequenceOver', (), {})


def variable_type(v):
    """A Variable's type (CNTK's Variable.type)."""
    return VariableType(shape=v.shape, dtype=v.dtype, needs_gradient=v.needs_gradient, is_sparse=v.is_sparse,
                        dynamic_axes=v.dynamic_axes)


def python_function_arguments(f):
    """The parameter names of a Python function (no *args or **kwargs) and its annotations."""
    params = inspect.signature(f).parameters.values()
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError('a CNTK Function cannot be made from a Python function with *args or **kwargs (%s)'
                            % f.__name__)
    names = [p.name for p in params]
    return names, {n: a for n, a in getattr(f, '__annotations__', {}).items() if n in names}


def required_positional_parameters(f):
    """The names of f's positional parameters without defaults (CNTK's rule for how many arguments a
    Python function takes: C.plus(a, b, *more, name='') takes two)."""
    return [p.name for p in inspect.signature(f).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]


def map_function_arguments(names, *args, **kwargs):
    """{name: value} for positional args (in order) and keyword args, as a Python call would bind them;
    TypeError for a count that differs, an unknown name or one given twice."""
    if len(args) > len(names):
        raise TypeError('%d arguments given for a function of %d parameters (%s)'
                        % (len(args) + len(kwargs), len(names), ', '.join(names)))
    bound = dict(zip(names, args))
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError("unknown argument name '%s' (the parameters are %s)" % (name, ', '.join(names)))
        if name in bound:
            raise TypeError("argument '%s' given twice" % name)
        bound[name] = value
    missing = [n for n in names if n not in bound]
    if missing:
        raise TypeError('missing arguments: %s' % ', '.join(missing))
    return bound


def Signature(*args, **kwargs):
    """CNTK's @Signature(types...): annotates the decorated Python function's parameters with the given
    types (positionally, or by name) for @Function, as Python 3 annotations would."""
    def annotate(f):
        names, annotations = python_function_arguments(f)
        if annotations:
            raise ValueError('@Signature cannot be applied to functions that already have annotations')
        if len(args) + len(kwargs) != len(names):
            raise TypeError('%d annotations provided for function to be decorated, but function has %d parameters'
                            % (len(args) + len(kwargs), len(names)))
        f.__annotations__ = map_function_arguments(names, *args, **kwargs)
        return f
    return annotate


def _input_from_type(t, name=''):
    """An input variable of type t (a typed Function argument)."""
    from ._ctk import input_variable, placeholder
    if t.is_inferred:  # `tensor`: a shape to infer, which only a placeholder can carry
        return placeholder(name=name)
    axes = t.dynamic_axes if t.dynamic_axes is not None else [Axis.default_batch_axis()]
    return input_variable(t.shape if t.shape is not None else (_INFERRED,), dtype=t.dtype or np.float32,
                          needs_gradient=bool(t.needs_gradient), is_sparse=bool(t.is_sparse),
                          dynamic_axes=axes, name=name)


__all__ = ['Tensor', 'SparseTensor', 'ParameterTensor', 'tensor', 'Sequence', 'SequenceOver', 'Signature',
           'VariableType']
