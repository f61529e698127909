"""cntk.ops.sequence (also cntk.sequence): ops over the frames of sequences, and input_variable for
sequence inputs."""
from .. import _ctk

__all__ = [n for n in dir(_ctk.sequence) if not n.startswith('_')]
globals().update({n: getattr(_ctk.sequence, n) for n in __all__})


def input(shape, dtype=None, needs_gradient=False, is_sparse=False, sequence_axis=None, name=''):  # noqa: A001
    """CNTK's deprecated name of sequence.input_variable (still in CNTK 2.7's cntk.ops.sequence)."""
    kwargs = {} if sequence_axis is None else {'sequence_axis': sequence_axis}
    return _ctk.sequence.input_variable(shape, dtype=dtype, needs_gradient=needs_gradient, is_sparse=is_sparse,
                                        name=name, **kwargs)


__all__.append('input')
