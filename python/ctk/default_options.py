"""cntk.default_options: CNTK's scoped defaults for layer arguments.

``with default_options(activation=relu, pad=True): ...`` sets defaults that the layers created inside the
block take for arguments left unset. The layer options ctk's layers know (activation, init, pad, bias,
init_bias, enable_self_stabilization, use_peepholes, go_backwards, initial_state, map_rank,
normalization_time_constant, epsilon, ...) reach ctk's C++ layers; any other name is kept for Python code
that reads it back, as CNTK's user layers do::

    def MyLayer(scale=default_override_or(2.0)):
        scale = get_default_override(MyLayer, scale=scale)

``default_options_for(functions, **kwargs)`` sets defaults only for the given functions.
"""
from ._ctk import layers as _layers

# The options ctk's C++ layers read (they raise NotImplementedError for an option value they lack).
_LAYER_OPTIONS = {'activation', 'init', 'pad', 'bias', 'init_bias', 'enable_self_stabilization', 'use_peepholes',
                  'go_backwards', 'initial_state', 'map_rank', 'normalization_time_constant', 'epsilon',
                  'use_cntk_engine', 'disable_regularization', 'dtype'}

_stack = []  # (functions or None, {name: value}), innermost last


class _DefaultOverride:
    """An argument left at its default, which default_options may override (CNTK's default_override_or)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return 'default_override_or(%r)' % (self.value,)


def default_override_or(value):
    """Marks an argument's default: `value` unless an enclosing default_options sets the argument."""
    return _DefaultOverride(value)


def is_default_override(value):
    return isinstance(value, _DefaultOverride)


def get_default_override(function, **kwargs):
    """The value of the one keyword argument given: itself when the caller set it, else the innermost
    default_options (or default_options_for naming `function`) value for its name, else the default
    default_override_or carried."""
    if len(kwargs) != 1:
        raise TypeError('get_default_override() expects exactly one keyword argument')
    (name, value), = kwargs.items()
    if not isinstance(value, _DefaultOverride):
        return value
    for functions, options in reversed(_stack):
        if name in options and (functions is None or function in functions):
            return options[name]
    return value.value


class default_options:
    """CNTK's default_options(**kwargs) context manager."""

    def __init__(self, **kwargs):
        self._functions = None
        self._options = kwargs
        layer_options = {k: v for k, v in kwargs.items() if k in _LAYER_OPTIONS}
        self._layers = _layers.default_options(**layer_options) if layer_options else None

    def __enter__(self):
        _stack.append((self._functions, self._options))
        if self._layers is not None:
            self._layers.__enter__()
        return self

    def __exit__(self, *exc):
        if self._layers is not None:
            self._layers.__exit__(*exc)
        _stack.pop()
        return False


class default_options_for(default_options):
    """default_options(**kwargs) for the given functions only (a function or a list of them), read by
    get_default_override. ctk's own layers take their defaults from default_options alone: naming one of
    them here raises NotImplementedError rather than being silently ignored."""

    def __init__(self, functions, **kwargs):
        functions = list(functions) if isinstance(functions, (list, tuple, set)) else [functions]
        for f in functions:
            if getattr(f, '__module__', '').startswith('ctk'):
                raise NotImplementedError('default_options_for: ctk\'s own layers (%s) read default_options only'
                                          % getattr(f, '__name__', f))
        super().__init__()
        self._functions, self._options = functions, kwargs


__all__ = ['default_options', 'default_options_for', 'default_override_or', 'get_default_override',
           'is_default_override']
