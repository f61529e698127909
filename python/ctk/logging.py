"""cntk.logging: progress writers with CNTK's log lines."""
import enum
from ._ctk.logging import (ProgressPrinter, TensorBoardProgressWriter,  # noqa: F401
                           log_number_of_parameters)

from ._ctk.logging import ProgressWriter as _ProgressWriterBase


class ProgressWriter(_ProgressWriterBase):
    """CNTK's ProgressWriter base for writers written in Python: define any of on_write_training_update(
    samples, updates, aggregate_loss, aggregate_metric), on_write_test_update(samples, updates,
    aggregate_metric), on_write_training_summary(samples, updates, summaries, aggregate_loss,
    aggregate_metric, elapsed_milliseconds), on_write_test_summary(samples, updates, summaries,
    aggregate_metric, elapsed_milliseconds) and write(key, value). Ranges and sums are (start, end)
    tuples; aggregate_metric is None without a metric. freq/first (test_freq/test_first) say which
    updates are written, as for ProgressPrinter."""

    def __init__(self, freq=None, first=0, tag='', log_to_file=None, rank=None, gen_heartbeat=False,
                 num_epochs=None, test_freq=None, test_first=0, metric_is_pct=True, distributed_freq=None,
                 distributed_first=0):
        super().__init__(freq, first, test_freq, test_first)
        self.tag, self.log_to_file, self.rank, self.num_epochs = tag, log_to_file, rank, num_epochs
        self.metric_is_pct = metric_is_pct
        self._keep_python_object(self)


class TrainingSummaryProgressCallback(ProgressWriter):
    """CNTK's TrainingSummaryProgressCallback(epoch_size, callback): a progress writer that calls
    callback(epoch_index, average_loss, average_metric, num_samples) after each epoch's summary (epoch
    indices from 0; average_metric None without a metric). It writes nothing itself."""

    def __init__(self, epoch_size, callback):
        super().__init__(freq=epoch_size)
        self._epoch_size, self._callback = epoch_size, callback

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss, aggregate_metric,
                                  elapsed_milliseconds):
        n = max(samples, 1)
        self._callback(summaries - 1, aggregate_loss / n,
                       None if aggregate_metric is None else aggregate_metric / n, samples)


# ---- the calls CNTK's scripts make on a writer by hand (every writer, ProgressPrinter included) ----

def _sums(writer):
    if not hasattr(writer, '_loss_sum'):
        writer._loss_sum, writer._metric_sum, writer._test_sum, writer._samples = 0.0, 0.0, 0.0, 0
    return writer


def _update(self, loss, minibatch_size, metric=None):
    """CNTK's update(loss, minibatch_size, metric=None): one minibatch's average loss (and metric) over
    minibatch_size samples, written when the writer's schedule says so."""
    if minibatch_size == 0:
        return
    w = _sums(self)
    w._samples += minibatch_size
    w._loss_sum += float(loss) * minibatch_size
    if metric is not None:
        w._metric_sum += float(metric) * minibatch_size
    self._update_training(int(minibatch_size), w._loss_sum, None if metric is None else w._metric_sum)


def _update_with_trainer(self, trainer, with_metric=False):
    """CNTK's update_with_trainer: the trainer's last minibatch (its average loss, and metric when asked)."""
    if trainer is not None and trainer.previous_minibatch_sample_count != 0:
        self.update(trainer.previous_minibatch_loss_average, trainer.previous_minibatch_sample_count,
                    trainer.previous_minibatch_evaluation_average if with_metric else None)


def _epoch_summary(self, with_metric=False):
    """CNTK's epoch_summary: the summary line of the updates since the last one, then a new epoch.
    Returns CNTK's (average loss, average metric or None, samples) of that epoch."""
    w = _sums(self)
    self._write_training_summary(w._loss_sum, w._metric_sum if with_metric else None)
    n = w._samples
    result = (w._loss_sum / n if n else 0.0, (w._metric_sum / n if n else 0.0) if with_metric else None, n)
    w._loss_sum, w._metric_sum, w._samples = 0.0, 0.0, 0
    return result


def _update_test(self, metric, minibatch_size):
    """A test minibatch's average metric over minibatch_size samples."""
    if minibatch_size == 0:
        return
    w = _sums(self)
    w._test_sum += float(metric) * minibatch_size
    self._update_test(int(minibatch_size), w._test_sum)


def _test_summary(self):
    w = _sums(self)
    self._write_test_summary(w._test_sum)
    w._test_sum = 0.0


def _log(self, message):
    """CNTK's log: the message on its own line."""
    print(message, flush=True)


def _end_progress_print(self, msg=''):
    if msg:
        print(msg, flush=True)


for _name, _fn in (('update', _update), ('update_with_trainer', _update_with_trainer),
                   ('epoch_summary', _epoch_summary), ('update_test', _update_test),
                   ('test_summary', _test_summary), ('log', _log), ('end_progress_print', _end_progress_print)):
    if not hasattr(_ProgressWriterBase, _name):
        setattr(_ProgressWriterBase, _name, _fn)


# ---- cntk.logging.graph: walking a graph ----

def depth_first_search(root, visitor, depth=0):
    """CNTK's depth_first_search: every node reachable from `root` (Functions, and the inputs,
    parameters, constants and placeholders they read; an output Variable stands for the Function that
    makes it) for which visitor(node) is true, in depth-first order from the root. `depth`: how many
    levels of blocks to look inside (-1: all; 0: blocks are single nodes)."""
    from ._ctk import Function
    # A composite of one Function's outputs starts at that Function; a combine of several Functions'
    # outputs is a node of its own (CNTK's Combine, named as the combine), whose inputs are those outputs.
    if isinstance(root, Function) and root.is_composite and len({o.owner.uid for o in root.outputs
                                                                  if o.owner is not None}) <= 1:
        root = root.root_function
    stack, visited, found = [(root, depth)], set(), []
    while stack:
        node, d = stack.pop()
        if not isinstance(node, Function) and node.is_output:
            node = node.owner
        key = ('f' if isinstance(node, Function) else 'v', node.uid)
        if key in visited:
            continue
        visited.add(key)
        if visitor(node):
            found.append(node)
        if isinstance(node, Function):
            if node.is_block and d != 0:
                stack.append((node.block_root, d - 1))
            stack.extend((i, d) for i in reversed(node.outputs if node.is_composite else node.inputs))
    return found


def find_all_with_name(node, node_name, depth=0):
    """Every Function or Variable named `node_name` in the graph of `node`."""
    return depth_first_search(node, lambda x: x.name == node_name, depth)


def find_by_name(node, node_name, depth=0):
    """The one Function or Variable named `node_name` (None when there is none; ValueError when
    several share the name, as in CNTK)."""
    found = find_all_with_name(node, node_name, depth)
    if len(found) > 1:
        raise ValueError('found multiple nodes named "%s": use find_all_with_name' % node_name)
    return found[0] if found else None


def get_node_outputs(node, depth=0):
    """The outputs of every Function in the graph of `node`."""
    from ._ctk import Function
    outputs = []
    for f in depth_first_search(node, lambda x: isinstance(x, Function), depth):
        outputs.extend(f.outputs)
    return outputs


def plot(root, filename=None):
    """The graph in Graphviz DOT text (returned; written when `filename` ends in .dot). CNTK also rendered
    images through pydot, which ctk does not bring: other file types raise NotImplementedError."""
    from ._ctk import Function
    if filename is not None and not filename.endswith('.dot'):
        raise NotImplementedError('plot: ctk writes DOT text only (%s): render it with Graphviz' % filename)
    nodes = depth_first_search(root, lambda x: True)
    lines = ['digraph G {']
    for n in reversed(nodes):  # inputs before the Functions that read them
        if isinstance(n, Function):
            lines.append('  "%s" [shape=ellipse, label="%s\\n%s"];' % (n.uid, n.op_name, n.name or n.uid))
            for i in (n.outputs if n.is_composite else n.inputs):
                src = i.owner.uid if i.is_output else i.uid
                lines.append('  "%s" -> "%s";' % (src, n.uid))
        else:
            lines.append('  "%s" [shape=box, label="%s"];' % (n.uid, n.name or n.uid))
    lines.append('}')
    text = '\n'.join(lines) + '\n'
    if filename is not None:
        with open(filename, 'w') as f:
            f.write(text)
    return text


# ---- trace level (CNTK's native log verbosity; ctk's C++ writes only CNTK's progress lines) ----

class TraceLevel(enum.IntEnum):
    """CNTK's trace levels: an IntEnum, so TraceLevel.Info == 2 and TraceLevel.Info.value both hold."""
    Error = 0
    Warning = 1
    Info = 2


_trace_level = TraceLevel.Warning


def set_trace_level(value):
    global _trace_level
    if value not in (TraceLevel.Error, TraceLevel.Warning, TraceLevel.Info):
        raise ValueError('set_trace_level: %r is not a TraceLevel' % (value,))
    _trace_level = value


def get_trace_level():
    return _trace_level


__all__ = ['ProgressWriter', 'TrainingSummaryProgressCallback', 'ProgressPrinter', 'TensorBoardProgressWriter', 'log_number_of_parameters',
           'depth_first_search', 'find_all_with_name', 'find_by_name', 'get_node_outputs', 'plot',
           'TraceLevel', 'set_trace_level', 'get_trace_level']
