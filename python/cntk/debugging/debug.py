"""cntk.debugging.debug: debug_model, set_checked_mode and the signature dumps."""
from ctk.debugging import (debug_model, set_checked_mode, get_checked_mode, set_node_timing,  # noqa: F401
                           dump_signature, dump_function)

__all__ = ['debug_model', 'set_checked_mode', 'get_checked_mode', 'set_node_timing', 'dump_signature',
           'dump_function']
