"""cntk.logging.graph: walking a Function's graph."""
from ctk.logging import depth_first_search, find_all_with_name, find_by_name, get_node_outputs, plot  # noqa: F401

__all__ = ['depth_first_search', 'find_all_with_name', 'find_by_name', 'get_node_outputs', 'plot']
