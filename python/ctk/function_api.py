"""The parts of CNTK's Function and Variable API written in Python in CNTK itself, attached to ctk's
classes: Functions made from Python functions (``@Function``, ``Function.with_signature``,
``BlockFunction``), typed signatures (``update_signature``, ``signature``, ``Variable.type``), calls with
keyword arguments, CNTK's printed form (``Dense(x: Sequence[tensor]) -> Sequence[tensor]``), and
``Function.train`` / ``Function.test`` over NumPy data or a MinibatchSource."""
import collections

import numpy as np

from . import _ctk
from .typing import (VariableType, sanitize_type, variable_type, python_function_arguments,
                     map_function_arguments, Signature, _input_from_type)

Function = _ctk.Function
Variable = _ctk.Variable


# ---- Functions from Python functions ----

def function_from_python(f, make_block=False, op_name=None, name=None):
    """The Function that the Python function f computes: its parameters become the Function's arguments
    in order (inputs of the annotated types, placeholders where unannotated); a tuple result becomes
    several outputs. make_block: one opaque op named op_name (CNTK's BlockFunction)."""
    names, annotations = python_function_arguments(f)
    types = [sanitize_type(annotations.get(n)) for n in names]
    if name is None:
        name = ''  # CNTK's @Function leaves the Function unnamed
    placeholders = [_ctk.placeholder(name=n) for n in names]
    if make_block or any(t is None for t in types):
        inner_args = placeholders
    else:
        inner_args = [_input_from_type(t, n) for t, n in zip(types, names)]
    out = f(*inner_args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for o in outs:
        if not isinstance(o, (Function, Variable)):
            raise TypeError('%s returned %s: a CNTK Function must return Variables or Functions'
                            % (f.__name__, type(o).__name__))
    body = _ctk.combine(outs)
    if make_block:
        outer = [_ctk.placeholder(name=n) for n in names]
        body = _ctk.as_block(body, list(zip(placeholders, outer)), op_name or f.__name__, name)
        inner_args = outer
    # A block lists its operands in order already; a composite is given the Python signature's order.
    result = body if make_block else _ctk._with_argument_order(body, inner_args, name)
    # Placeholders of annotated parameters (a block, or some unannotated ones) become typed inputs now.
    typed = {a: _input_from_type(t, a.name) for a, t in zip(inner_args, types) if t is not None and a.is_placeholder}
    if typed:
        result.replace_placeholders(typed)
    return result


def BlockFunction(op_name, name):
    """CNTK's @BlockFunction(op_name, name): the decorated Python function as one block op."""
    return lambda f: function_from_python(f, make_block=True, op_name=op_name, name=name)


def _with_signature(*args, **kwargs):
    """@Function.with_signature(types...): @Function of the decorated Python function with its parameters
    typed (positionally or by name)."""
    return lambda f: function_from_python(Signature(*args, **kwargs)(f))


def _update_signature(self, *arg_types, **kwarg_types):
    """Replaces this Function's placeholders (in argument order, or by name) with inputs of the given
    types, in place (CNTK's update_signature)."""
    placeholders = list(self.placeholders)
    names = [p.name for p in placeholders]
    if len(arg_types) + len(kwarg_types) != len(placeholders):
        raise TypeError('update_signature: %d types given for a Function with %d placeholders (%s)'
                        % (len(arg_types) + len(kwarg_types), len(placeholders), ', '.join(names)))
    if kwarg_types and len(set(names)) != len(names):
        raise TypeError('update_signature: the placeholders have no distinct names; give the types in order')
    by_name = map_function_arguments(names, *arg_types, **kwarg_types)
    self.replace_placeholders({p: _input_from_type(sanitize_type(by_name[p.name]), p.name) for p in placeholders})


def _signature(self):
    """The arguments a call binds, in order (CNTK's Function.signature)."""
    return list(self.arguments)


_ctk_call = Function.__call__


def _call(self, *args, **kwargs):
    """CNTK's __call__: Variables or Functions compose (bound to the arguments in order, or by name);
    data evaluates. Keyword arguments name the arguments."""
    if kwargs:
        # A call binds placeholders: inputs that a Function closes over (a decoder's encoder input inside
        # an UnfoldFrom) are not its parameters.
        placeholders = list(self.placeholders)
        arguments = placeholders if placeholders else list(self.arguments)
        names = [a.name for a in arguments]
        bound = map_function_arguments(names, *args, **kwargs)
        args = tuple(bound[n] for n in names)
    return _ctk_call(self, *args)


# ---- printed form ----

def _type_str(v, is_output=False):
    s = '' if is_output or not v.name else v.name + ': '
    if v.is_placeholder or not v._shape_known:
        # Not yet bound: CNTK prints such a variable (unknown shape and axes) as a sequence of tensors.
        return s + 'Sequence[tensor]'
    return s + str(variable_type(v))


def _function_str(self):
    """CNTK's str(Function): 'name: Op(arg: type, ...) -> type'."""
    op = self.op_name
    args = list(self.arguments)
    if self.is_composite:
        # CNTK names a composite by its root op when the root reads the composite's own arguments.
        root = self.root_function
        same = root is not None and not root.is_composite and len(self.outputs) == 1 and \
            [i.uid for i in root.inputs] == [a.uid for a in args]
        op = root.op_name if same else 'Composite'
    outs = self.outputs
    out_sig = _type_str(outs[0], True) if len(outs) == 1 else \
        'Tuple[%s]' % ', '.join(_type_str(o, True) for o in outs)
    prefix = self.name + ': ' if self.name else ''
    return '%s%s(%s) -> %s' % (prefix, op, ', '.join(_type_str(a) for a in args), out_sig)


# ---- Function.train and Function.test ----

Record = collections.namedtuple('Record', ['loss', 'metric', 'samples'])
TestRecord = collections.namedtuple('TestRecord', ['metric', 'samples'])


class TrainingSummary:
    """What Function.train returns: `updates` (one Record(loss, metric, samples) per progress update)
    and `epoch_summaries` (one per epoch), losses and metrics averaged per sample."""

    def __init__(self):
        self.updates, self.epoch_summaries = [], []


def _progress_collector(summary, freq):
    from .logging import ProgressWriter

    class Collector(ProgressWriter):
        def on_write_training_update(self, samples, updates, loss, metric):
            n = samples[1] - samples[0]
            summary.updates.append(Record(loss=(loss[1] - loss[0]) / max(n, 1),
                                          metric=None if metric is None else (metric[1] - metric[0]) / max(n, 1),
                                          samples=n))

        def on_write_training_summary(self, samples, updates, summaries, loss, metric, elapsed_ms):
            summary.epoch_summaries.append(Record(loss=loss / max(samples, 1),
                                                  metric=None if metric is None else metric / max(samples, 1),
                                                  samples=samples))
    return Collector(freq)


def _criterion_outputs(self):
    outs = list(self.outputs)
    if not 1 <= len(outs) <= 2:
        raise ValueError('train: the criterion Function must have 1 (loss) or 2 (loss, metric) outputs, not %d'
                         % len(outs))
    return outs


def _data_source(self, minibatch_source, streams, model_inputs_to_streams):
    """(source, {argument: stream}) for Function.train/test: NumPy data (an array, or a tuple/list of them
    in argument order, or a dict by argument or name) becomes a MinibatchSourceFromData."""
    from .io import MinibatchSourceFromData
    arguments = list(self.arguments)
    if model_inputs_to_streams is not None:
        return minibatch_source, dict(model_inputs_to_streams)
    if not hasattr(minibatch_source, 'next_minibatch'):
        data = minibatch_source
        if isinstance(data, dict):
            data = [data[a] if a in data else data[a.name] for a in arguments]
        elif not isinstance(data, (tuple, list)):
            data = [data]
        if len(data) != len(arguments):
            raise ValueError('%d data arrays given for a Function of %d arguments (%s)'
                             % (len(data), len(arguments), ', '.join(a.name or a.uid for a in arguments)))
        names = ['s%d' % i for i in range(len(arguments))]
        minibatch_source = MinibatchSourceFromData(dict(zip(names, data)))
        streams = names
    if streams is None:
        raise ValueError('train/test over a MinibatchSource need streams (one per argument, in order) or '
                         'model_inputs_to_streams')
    stream_infos = [minibatch_source.streams[s] if isinstance(s, str) else s for s in streams]
    if len(stream_infos) != len(arguments):
        raise ValueError('%d streams given for a Function of %d arguments' % (len(stream_infos), len(arguments)))
    return minibatch_source, dict(zip(arguments, stream_infos))


def _train(self, minibatch_source, minibatch_size=32, streams=None, model_inputs_to_streams=None,
           parameter_learners=[], callbacks=[], progress_frequency=None, max_epochs=None, epoch_size=None,
           max_samples=None):
    """CNTK's Function.train: trains this criterion Function (outputs loss[, metric]) with the learners on
    NumPy data or a MinibatchSource, one epoch of epoch_size samples (NumPy data: all of it) max_epochs
    times (default 1) or up to max_samples. Callbacks are progress writers; returns a TrainingSummary."""
    from .train import Trainer
    from .logging import ProgressWriter as PyWriter
    from ._ctk.logging import ProgressWriter as AnyWriter
    loss_metric = _criterion_outputs(self)
    source, input_map = _data_source(self, minibatch_source, streams, model_inputs_to_streams)
    writers = [c for c in (callbacks or []) if isinstance(c, (AnyWriter, PyWriter))]
    others = [c for c in (callbacks or []) if c not in writers]
    if others:
        raise NotImplementedError('Function.train: callbacks other than progress writers (%s) are not supported '
                                  'by ctk; use training_session for checkpoints and validation'
                                  % ', '.join(type(c).__name__ for c in others))
    if epoch_size is None:
        epoch_size = getattr(source, 'num_samples', None)
        if epoch_size is None:
            raise ValueError('Function.train over a MinibatchSource needs epoch_size')
    if max_samples is None:
        max_samples = epoch_size * (1 if max_epochs is None else max_epochs)
    summary = TrainingSummary()
    collector = _progress_collector(summary, progress_frequency or (writers[0].freq if writers and
                                                                    getattr(writers[0], 'freq', None) else None))
    trainer = Trainer(None, tuple(loss_metric), parameter_learners, writers + [collector])
    seen, epoch_end = 0, epoch_size
    while seen < max_samples:
        mb = source.next_minibatch(min(minibatch_size, max_samples - seen), input_map=input_map)
        if not mb:
            break
        trainer.train_minibatch(mb)
        seen += trainer.previous_minibatch_sample_count
        if seen >= epoch_end or seen >= max_samples:
            trainer.summarize_training_progress()
            epoch_end += epoch_size
    return summary


def _test(self, minibatch_source, minibatch_size=32, streams=None, model_inputs_to_streams=None, callbacks=None):
    """CNTK's Function.test: the metric (the second output, else the first) over all of the data;
    returns TestRecord(metric, samples)."""
    from .train import Evaluator
    outs = _criterion_outputs(self)
    source, input_map = _data_source(self, minibatch_source, streams, model_inputs_to_streams)
    evaluator = Evaluator(outs[-1], list(callbacks or []))
    total, samples = 0.0, 0
    while True:
        mb = source.next_minibatch(minibatch_size, input_map=input_map)
        if not mb:
            break
        n = max(v.num_samples if hasattr(v, 'num_samples') else len(v) for v in mb.values())
        total += evaluator.test_minibatch(mb) * n
        samples += n
        if any(getattr(v, 'sweep_end', False) for v in mb.values()):
            break
    evaluator.summarize_test_progress()
    return TestRecord(metric=total / max(samples, 1), samples=samples)


def _print_node_timing():
    from .debugging import print_node_timing
    print_node_timing()


def _rshift(self, other):
    """CNTK's f >> g: forward composition, g(f) (Sequential([f, g])); g may be any callable (an op such as
    hardmax, a layer, a Python function)."""
    if not callable(other):
        return NotImplemented
    return other(self)


def _take(ops, x, axis, n, i):
    """Element i of `axis` (of size n, or None when not known yet), the axis kept with one element."""
    if n is not None and not -n <= i < n:
        raise IndexError('index %d is out of range for axis %d of size %d' % (i, axis, n))
    if n is not None and i < 0:
        i += n
    return ops.slice(x, axis, i, 0 if i == -1 else i + 1)


def _getitem(self, key):
    """CNTK's x[...]: NumPy-style indexing of the static axes as slices (an integer keeps its axis, with
    one element, as CNTK's did): x[1:3], x[..., 0], x[0, ::2]. Indices after an ellipsis count from the
    last axis, so a Function whose shape is not known yet (a decoder built on placeholders) can be
    indexed as CNTK's examples do (w[..., end_index])."""
    from . import _ctk as ops
    keys = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in keys) > 1:
        raise IndexError('an index can only have a single ellipsis')
    shape = tuple(self.shape)
    if Ellipsis in keys:
        at = keys.index(Ellipsis)
        after = keys[at + 1:]
        plan = list(enumerate(keys[:at])) + [(j - len(after), k) for j, k in enumerate(after)]
    else:
        if shape and len(keys) > len(shape):
            raise IndexError('too many indices (%d) for a sample of rank %d' % (len(keys), len(shape)))
        plan = list(enumerate(keys))
    x = self
    for axis, k in plan:
        n = shape[axis] if shape and -len(shape) <= axis < len(shape) and shape[axis] >= 0 else None
        if isinstance(k, slice):
            step = 1 if k.step is None else k.step
            if step < 1:
                raise IndexError('a slice step must be positive, got %d' % step)
            if n is not None:
                start, stop, _ = k.indices(n)
                if (start, stop, step) == (0, n, 1):
                    continue
            else:  # CNTK's slice: a negative index counts from the end, an end of 0 is the end
                start, stop = k.start or 0, 0 if k.stop is None else k.stop
                if (start, stop, step) == (0, 0, 1):
                    continue
            x = ops.slice(x, axis, start, stop, [step] if step != 1 else None)
        elif isinstance(k, (int, np.integer)):
            x = _take(ops, x, axis, n, int(k))
        elif isinstance(k, list) and k and all(isinstance(i, (int, np.integer)) for i in k):
            # A list of indices takes those elements, in order, keeping the axis (CNTK spliced them).
            x = ops.splice([_take(ops, x, axis, n, int(i)) for i in k], axis=axis)
        else:
            raise IndexError('only integers, slices, lists of integers and ... index a CNTK Variable, got %r'
                             % (k,))
    return x


# CNTK's Function.attributes: shapes as tuples in Python's axis order, the per-axis flags autoPadding and
# sharing in Python's axis order too, and an axis as (ordering, 'static' or 'dynamic', index or name).
_SHAPE_ATTRIBUTES = frozenset(['newShape', 'strides', 'dilation', 'lowerPad', 'upperPad', 'outputShape',
                               'kernelShape', 'poolingWindowShape', 'unpoolingWindowShape', 'paddingHead',
                               'paddingFoot', 'roiOutputShape'])
_PER_AXIS_FLAGS = frozenset(['autoPadding', 'sharing'])
_FIRST_SPECIAL_AXIS_INDEX = 2147483647 - 4  # CNTK's sentinels for dynamic, all-static and all axes


def _attribute_value(key, v, rank):
    if isinstance(v, dict) and 'static_axis_idx' in v:
        ordering = 'ordered' if v.get('is_ordered_dynamic_axis', True) else 'unordered'
        index = v['static_axis_idx']
        if index < _FIRST_SPECIAL_AXIS_INDEX:
            # A static axis counted from the end (ctk writes them so) as CNTK counts it, from the start.
            return (ordering, 'static', index + rank if index < 0 and rank else index)
        return (ordering, 'dynamic', v.get('name', ''))
    if isinstance(v, list):
        if key in _SHAPE_ATTRIBUTES:
            return tuple(v)
        if key in _PER_AXIS_FLAGS:
            return list(reversed(v))
        return [_attribute_value(None, item, rank) for item in v]
    if isinstance(v, dict):
        return {k: _attribute_value(k, item, rank) for k, item in v.items()}
    return v


def _attributes(self):
    """The attributes of a primitive Function, with CNTK's names (CNTK's Function.attributes); axes are
    CNTK's static axis indices of the first operand (column-major: Python's last axis is 0)."""
    inputs = self.inputs
    rank = len(inputs[0].shape) if inputs else 0
    return {k: _attribute_value(k, v, rank) for k, v in self._cntk_v2_attributes().items()}


def _variable_array(self, dtype=None):
    """np.asarray(parameter or constant): its value (CNTK's Parameter and Constant convert so)."""
    if not (self.is_parameter or self.is_constant):
        raise TypeError('%s has no value of its own: only parameters and constants convert to arrays; '
                        'evaluate the variable instead' % (self,))
    value = np.asarray(self.value)
    return value if dtype is None else value.astype(dtype)


def _graph_search():
    from . import logging
    return logging


def install():
    """Attaches the methods above to ctk's Function and Variable classes."""
    Function.with_signature = staticmethod(_with_signature)
    Function.update_signature = _update_signature
    Function.declare_args = _update_signature  # CNTK's older name
    Function.signature = property(_signature)
    Function.__call__ = _call
    Function.__rshift__ = _rshift
    Function.__getitem__ = _getitem
    Variable.__getitem__ = _getitem
    Function.__str__ = _function_str
    Function.train = _train
    Function.test = _test
    Function.print_node_timing = lambda self: _print_node_timing()
    Function.save_model = lambda self, filename: self.save(filename)  # CNTK 2.0's name of save
    # CNTK's methods search the graph as cntk.logging.graph does: Functions and the Variables they read.
    Function.find_all_with_name = lambda self, name, depth=0: _graph_search().find_all_with_name(self, name, depth)
    Function.find_by_name = lambda self, name, depth=0: _graph_search().find_by_name(self, name, depth)
    Variable.type = property(variable_type)
    Variable._Type = VariableType
    Variable.__array__ = _variable_array
    # `array * variable` builds a graph node (the variable's reflected operator) instead of NumPy
    # converting the variable: NumPy defers to operands of a higher array priority.
    Variable.__array_priority__ = 100
    Function.__array_priority__ = 100
    Function.attributes = property(_attributes)
