"""cntk.variables: Variable, Parameter, Constant and Record."""
from ctk.variables import *  # noqa: F401,F403
from ctk.variables import __all__  # noqa: F401

from ctk.typing import VariableType  # noqa: F401


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
        return Record(**d)


__all__ = list(__all__) + ['Record']
