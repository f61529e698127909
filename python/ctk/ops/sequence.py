"""cntk.ops.sequence (also cntk.sequence): ops over the frames of sequences, and input_variable for
sequence inputs."""
from .. import _ctk

__all__ = [n for n in dir(_ctk.sequence) if not n.startswith('_')]
globals().update({n: getattr(_ctk.sequence, n) for n in __all__})
