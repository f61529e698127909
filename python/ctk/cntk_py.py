"""cntk.cntk_py: the few low-level functions CNTK scripts call directly (C.cntk_py.set_fixed_random_seed)."""
from ._ctk import set_fixed_random_seed  # noqa: F401
