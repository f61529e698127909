"""cntk.debugging.profiler: CNTK's profiler over ctk's op profile."""
from ctk.debugging import start_profiler, enable_profiler, disable_profiler, stop_profiler  # noqa: F401

__all__ = ['start_profiler', 'enable_profiler', 'disable_profiler', 'stop_profiler']
