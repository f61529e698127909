"""cntk.variables: CNTK's Variable, Parameter and Constant classes. ctk has one Variable class; Parameter
and Constant construct parameters and constants (CNTK's constructors and argument order) and answer
isinstance() by the variable's kind."""
from ._ctk import Variable
from .ops import constant as _constant, parameter as _parameter


class _KindCheck(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Variable) and getattr(obj, cls._kind)


class Parameter(metaclass=_KindCheck):
    """Parameter(shape=None, init=None, dtype=None, device=None, name=''): a learnable parameter."""
    _kind = 'is_parameter'

    def __new__(cls, shape=None, init=None, dtype=None, device=None, name=''):
        return _parameter(shape=shape, init=init, dtype=dtype, device=device, name=name)


class Constant(metaclass=_KindCheck):
    """Constant(value=None, shape=None, dtype=None, device=None, name=''): a constant."""
    _kind = 'is_constant'

    def __new__(cls, value=None, shape=None, dtype=None, device=None, name=''):
        return _constant(value=value, shape=shape, dtype=dtype, device=device, name=name)


class Record(dict):
    """CNTK's Record: a dict whose entries are also attributes (Record(loss=..., metric=...).loss)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value

    def updated_with(self, **kwargs):
        d = dict(self)
        d.update(kwargs)
        return type(self)(**d)


__all__ = ['Variable', 'Parameter', 'Constant', 'Record']
