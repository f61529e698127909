"""cntk.debugging: force_deterministic_algorithms, CNTK's profiler (start_profiler, enable_profiler,
disable_profiler, stop_profiler; also as cntk.debugging.profiler) and set_computation_network_trace_level."""
import sys

from . import _ctk


def force_deterministic_algorithms(value=True):
    """CNTK's switch for bit-reproducible runs: on a GPU only deterministic algorithms are used (ctk's CPU
    kernels are deterministic for a given thread count already)."""
    _ctk._set_deterministic(bool(value))


def deterministic_algorithms_forced():
    return _ctk._deterministic()


def start_profiler(dir='profiler', sync_gpu=True, reserve_mem=33554432):
    """Starts a profiling session whose summary stop_profiler() writes into `dir`. Nothing is timed until
    enable_profiler() (a training_session enables it after its first checkpoint, or after its first sweep
    when it writes none). With sync_gpu, the host waits for the GPU at the end of each op, so host times
    include the op's GPU work; GPU times are measured with CUDA events either way. reserve_mem (CNTK's
    event buffer) is accepted: ctk keeps totals per op rather than events."""
    _ctk._start_profiler(str(dir), bool(sync_gpu), int(reserve_mem))


def enable_profiler():
    """Times every op from now on (forward and backward apart, host and GPU), the learners' updates and
    the training steps."""
    _ctk._enable_profiler()


def disable_profiler():
    _ctk._disable_profiler()


def stop_profiler():
    """Stops timing and writes the summary, `<dir>/<timestamp>_summary_<rank>.txt`: per op, the calls,
    host ms, GPU ms and host waits per training step. Returns its path (None without start_profiler)."""
    return _ctk._stop_profiler() or None


_trace_level = 0


def set_computation_network_trace_level(level):
    """CNTK's trace of the computation network's evaluation. Level 0 (no trace, CNTK's default) is what ctk
    runs; a higher level is accepted with a note on stderr that ctk prints no such trace (the op profile,
    start_profiler, says where the time goes)."""
    global _trace_level
    level = int(level)
    if level < 0:
        raise ValueError('set_computation_network_trace_level: level %d must be >= 0' % level)
    if level > 0 and _trace_level == 0:
        print('ctk: set_computation_network_trace_level(%d): ctk prints no trace of the network\'s evaluation; '
              'training goes on without one' % level, file=sys.stderr)
    _trace_level = level


# CNTK's module path cntk.debugging.profiler holds the profiler functions.
profiler = sys.modules[__name__]

__all__ = ['force_deterministic_algorithms', 'deterministic_algorithms_forced', 'start_profiler',
           'enable_profiler', 'disable_profiler', 'stop_profiler', 'set_computation_network_trace_level']
