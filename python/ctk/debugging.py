"""cntk.debugging: force_deterministic_algorithms."""
from . import _ctk


def force_deterministic_algorithms(value=True):
    """CNTK's switch for bit-reproducible runs: on a GPU only deterministic algorithms are used (ctk's CPU
    kernels are deterministic for a given thread count already)."""
    _ctk._set_deterministic(bool(value))


def deterministic_algorithms_forced():
    return _ctk._deterministic()


__all__ = ['force_deterministic_algorithms', 'deterministic_algorithms_forced']
