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


_checked_mode = False
_track_gap_nans = False


def set_computation_network_track_gap_nans(enable):
    """CNTK's debugging switch that filled the padding frames of its minibatches with NaN to catch ops
    reading them. ctk's sequence ops read only each sequence's own frames; the switch is recorded
    (get_computation_network_track_gap_nans) and changes nothing else."""
    global _track_gap_nans
    _track_gap_nans = bool(enable)


def get_computation_network_track_gap_nans():
    return _track_gap_nans


def set_checked_mode(enable):
    """CNTK's checked mode: extra validation of values while evaluating. ctk validates shapes, dtypes
    and data layouts always; checked mode is recorded (get_checked_mode) and changes nothing else."""
    global _checked_mode
    _checked_mode = bool(enable)


def get_checked_mode():
    return _checked_mode


_node_timing = False


def set_node_timing(enable):
    """CNTK's per-node timing: on, every op's time is kept (ctk's op profile, the one start_profiler
    uses) and Function.print_node_timing() / Trainer.print_node_timing() print it."""
    global _node_timing
    _node_timing = bool(enable)
    if _node_timing:
        _ctk._node_timing_start()
    else:
        _ctk._node_timing_stop()


def print_node_timing():
    """Prints the time per op since node timing was turned on (or last printed), then starts again."""
    text = _ctk._node_timing_report()
    print(text if text else 'ctk: no node timing: call cntk.debugging.set_node_timing(True) first')


def dump_signature(root, tag=None):
    """Prints the Function's signature in CNTK's form, e.g. 'Function(x: Tensor[13]) -> Tensor[10]'."""
    text = str(root)
    if tag is not None:
        text = tag + ': ' + text.split(': ', 1)[-1] if root.name else tag + text
    else:
        text = 'Function' + text[text.index('('):]
    print(text)


def dump_function(root, tag=None):
    """Prints every Function of the graph, one per line, with its inputs."""
    from .logging import depth_first_search
    from ._ctk import Function
    print(tag or root.name or 'Function')
    for f in depth_first_search(root, lambda n: isinstance(n, Function)):
        print('  %s %s(%s) -> %s' % (f.uid, f.op_name, ', '.join(i.uid for i in f.inputs),
                                    ', '.join(o.uid for o in f.outputs)))


def debug_model(model, in_stream=sys.stdin, out_stream=sys.stdout, exit_func=sys.exit):
    """CNTK's interactive node-by-node debugger (pdb-like, over the model's forward and backward) is not
    part of ctk: the model's values and gradients are inspected with eval/forward/backward."""
    raise NotImplementedError('debug_model: ctk has no interactive graph debugger; evaluate intermediate '
                              'outputs with combine([...]).eval() or Function.forward/backward instead')


def save_as_legacy_model(root_op, filename):
    """CNTK's writer of the legacy (v1, cntk.exe/BrainScript) model format. ctk reads v1 models but does
    not write them: nothing ctk runs needs the legacy format, so this raises."""
    raise NotImplementedError('save_as_legacy_model: ctk reads CNTK v1 models but does not write them; '
                              'save with Function.save (CNTK v2) or format=ModelFormat.ONNX')


# CNTK's module path cntk.debugging.profiler holds the profiler functions.
profiler = sys.modules[__name__]

__all__ = ['force_deterministic_algorithms', 'deterministic_algorithms_forced', 'start_profiler',
           'enable_profiler', 'disable_profiler', 'stop_profiler', 'set_computation_network_trace_level',
           'set_checked_mode', 'get_checked_mode', 'set_computation_network_track_gap_nans',
           'get_computation_network_track_gap_nans', 'set_node_timing', 'print_node_timing', 'dump_signature',
           'dump_function', 'debug_model', 'save_as_legacy_model']
