"""cntk.tensor: CNTK's mixins that gave Variables and Functions their operators (+, *, [] ...) and
NumPy views. ctk's Variable and Function have them built in; the names remain for isinstance-free
imports."""


class TensorOpsMixin:
    """Operators of Variables and Functions (built into ctk's classes)."""


class ArrayMixin:
    """asarray() of Parameters, Constants and Values (built into ctk's classes)."""


__all__ = ['TensorOpsMixin', 'ArrayMixin']
