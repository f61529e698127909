"""cntk.initializer: parameter initializers with CNTK's scaling rules."""
from ._ctk import (Initializer, uniform, normal, truncated_normal, xavier, glorot_uniform,  # noqa: F401
                   glorot_normal, he_uniform, he_normal, bilinear, initializer_with_rank)

# CNTK's default scale of the initializers (their `scale` argument).
DefaultParamInitScale = 1

__all__ = ['DefaultParamInitScale', 'uniform', 'normal', 'truncated_normal', 'xavier', 'glorot_uniform', 'glorot_normal',
           'he_uniform', 'he_normal', 'bilinear', 'initializer_with_rank']
