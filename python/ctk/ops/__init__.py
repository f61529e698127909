"""cntk.ops: every graph op, the variable factories (input_variable, parameter, constant, placeholder),
combine, as_block, Axis, Variable and Function."""
from .. import _ctk

_NOT_OPS = {'layers', 'learners', 'io', 'logging', 'train', 'sequence', 'Value', 'Initializer', 'uniform',
            'normal', 'truncated_normal', 'xavier', 'glorot_uniform', 'glorot_normal', 'he_uniform',
            'he_normal', 'bilinear', 'set_fixed_random_seed', 'sequence_input_variable',
            'SentinelValueForInferParamInitRank', 'SentinelValueForAutoSelectRandomSeed', 'set_num_threads',
            'num_threads', 'random', 'NDArrayView'}
__all__ = [n for n in dir(_ctk) if not n.startswith('_') and n not in _NOT_OPS]
globals().update({n: getattr(_ctk, n) for n in __all__})

from . import sequence, functions  # noqa: E402
