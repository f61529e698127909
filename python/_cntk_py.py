"""_cntk_py: the top-level name of CNTK's native module, which some CNTK scripts import directly
(`import _cntk_py; _cntk_py.set_computation_network_trace_level(0)`). The same functions as cntk.cntk_py."""
from ctk.cntk_py import *  # noqa: F401,F403
from ctk.cntk_py import __all__  # noqa: F401
