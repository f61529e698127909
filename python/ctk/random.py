"""cntk.random: random draws as graph ops (uniform, normal, bernoulli, gumbel and their *_like forms),
seeded by set_fixed_random_seed unless a seed is given."""
from ._ctk.random import (uniform, uniform_like, normal, normal_like, bernoulli, bernoulli_like,  # noqa: F401
                          gumbel, gumbel_like)

__all__ = ['uniform', 'uniform_like', 'normal', 'normal_like', 'bernoulli', 'bernoulli_like', 'gumbel',
           'gumbel_like']
