"""cntk.layers: the layers library. Layers are Functions with one placeholder: apply one with layer(x).
For is written in Python as in CNTK."""
import inspect

from ._ctk import Function, as_block, as_function, combine, placeholder
from .typing import required_positional_parameters
from .default_options import default_options, default_options_for  # noqa: F401
from ._ctk.layers import Sequential as _Sequential
from ._ctk.layers import ResNetBlock as _ResNetBlock
from ._ctk.layers import (identity, Dense, Convolution, SequentialConvolution, Convolution1D,  # noqa: F401
                          Convolution2D, Convolution3D, MaxPooling, AveragePooling, GlobalMaxPooling,
                          GlobalAveragePooling, Dropout, BatchNormalization, LayerNormalization, Embedding,
                          Activation, Stabilizer, Label, SequentialClique, LSTM, GRU,
                          RNNStep, _recurrence, _recurrence_from, ConvolutionTranspose, ConvolutionTranspose1D,
                          ConvolutionTranspose2D, ConvolutionTranspose3D, MaxUnpooling)


def _has_fork(layers):
    return any(isinstance(l, tuple) or (isinstance(l, list) and _has_fork(l)) for l in layers)


def _arity(layer):
    """How many operands a layer takes (None when unknown)."""
    if isinstance(layer, list):
        return _arity(layer[0]) if layer else None
    if isinstance(layer, Function):
        return len(layer.placeholders)
    try:
        return len(required_positional_parameters(layer))
    except (TypeError, ValueError):
        return None


def Sequential(layers, name=''):
    """CNTK's Sequential: the layers applied in turn; a nested list is a Sequential, a tuple applies each of
    its layers to the same input and passes all their outputs on (CNTK's fork, e.g. `(Delay(-1),
    Delay(0), Delay(1))` then `splice`), or, after a layer with as many outputs as the tuple has
    one-operand layers, each layer to its own output (`(Label('h'), Label('c'))` after a recurrence with
    return_full_state); a layer with several outputs passes them all as arguments."""
    layers = list(layers) if isinstance(layers, (list, tuple)) else [layers]
    if not layers:  # CNTK: the identity (For(range(0), ...) in a one-layer model)
        layers = [identity]
    if not _has_fork(layers):
        return _Sequential(layers, name)
    x = placeholder(name='x')

    def apply(layer, args):
        if isinstance(layer, list):
            layer = Sequential(layer)
        if isinstance(layer, tuple):
            if len(args) == len(layer) > 1 and all(_arity(b) == 1 for b in layer):
                return [out for branch, a in zip(layer, args) for out in apply(branch, [a])]
            return [out for branch in layer for out in apply(branch, args)]
        y = layer(*args)
        if isinstance(y, Function):
            return list(y.outputs)
        return list(y) if isinstance(y, (tuple, list)) else [y]

    outs = [x]
    for layer in layers:
        outs = apply(layer, outs)
    return as_block(combine(outs), [(x, placeholder())], 'Sequential', name)


def For(what_range, constructor, name=''):
    """CNTK's For: Sequential([constructor(i) for i in what_range]); constructor may take no argument."""
    takes_arg = len(inspect.signature(constructor).parameters) > 0
    layers = [constructor(i) if takes_arg else constructor() for i in what_range]
    return Sequential(layers, name=name)


def _as_step_function(step_function):
    """A step function for Recurrence and Fold: a Function as it is, or a Python function of (states..., x)
    turned into a block whose operands are its arguments in order (CNTK's Function(lambda))."""
    if isinstance(step_function, Function):
        return step_function
    names = required_positional_parameters(step_function)  # C.plus(a, b, *more, name='') is binary
    args = [placeholder(name=n) for n in names]
    out = step_function(*args)
    if isinstance(out, (tuple, list)):
        out = combine(list(out))
    elif not isinstance(out, Function):
        out = as_function(out)
    return as_block(out, [(a, placeholder()) for a in args], 'StepFunction')


def Recurrence(step_function, go_backwards=None, initial_state=None, return_full_state=False, name=''):
    """CNTK's Recurrence: step_function(states..., x) along the sequence axis, states fed back through
    past_value (go_backwards: future_value) from initial_state (None: default_options', else False and 0)."""
    return _recurrence(_as_step_function(step_function), go_backwards, initial_state, return_full_state, False,
                       name)


def Fold(folder_function, go_backwards=None, initial_state=None, return_full_state=False, name=''):
    """CNTK's Fold: Recurrence, then the last step of the sequence (go_backwards: the first)."""
    return _recurrence(_as_step_function(folder_function), go_backwards, initial_state, return_full_state, True,
                       name)


def RecurrenceFrom(step_function, go_backwards=None, return_full_state=False, name=''):
    """CNTK's RecurrenceFrom: Recurrence whose initial states are given when it is applied,
    layer(s0, ..., x), e.g. a decoder started from an encoder's final state."""
    return _recurrence_from(_as_step_function(step_function), go_backwards, return_full_state, name)


def UnfoldFrom(generator_function, map_state_function=identity, until_predicate=None, length_increase=1,
               initial_state=None, name=''):
    """CNTK's UnfoldFrom (written in Python by CNTK, as here): a layer that, applied to a sequence, emits
    f(s), f(f(s)), ... from the seed initial_state, one item per frame of that sequence (times
    length_increase); f returns the next state, or (output, next state). until_predicate(output) = 1
    marks the last item: the items after it are dropped. Applied as layer(dynamic_axes_like) when
    initial_state is given here (CNTK 2.0), else as layer(initial_state, dynamic_axes_like) (CNTK 2.2 on;
    keywords work too)."""
    from . import _ctk as C
    if not callable(generator_function):
        raise TypeError('generator_function must be a Function or a Python function')

    def apply(f, *args):
        out = f(*args)
        return list(out.outputs) if isinstance(out, Function) else list(out) if isinstance(out, (tuple, list)) \
            else [out]

    def unfold_from(dynamic_axes_like, initial_state):
        out_axis = dynamic_axes_like
        if length_increase != 1:
            # Each frame repeated length_increase times, on average: a new axis of that length.
            out_axis = C.sequence.where(C.sequence.broadcast_as(C.constant(float(length_increase)), out_axis))
        state_fwd = placeholder(name='unfold_state_fwd')
        prev_state = C.sequence.past_value(state_fwd, initial_state=initial_state)
        outs = apply(generator_function, prev_state)
        if not 1 <= len(outs) <= 2:
            raise TypeError('generator_function should return a single output or a tuple (output, new state)')
        output = outs[0]
        new_state = map_state_function(outs[1] if len(outs) > 1 else output)
        # The loop takes its frames from out_axis (a relabelling inside the loop).
        new_state = C.reconcile_dynamic_axes(new_state, out_axis)
        # Closing the loop re-infers what hangs off it: the output too, when it is not the state.
        combine([new_state.output, output]).replace_placeholders({state_fwd: new_state.output})
        # (Relabelled by the state: the graph must hold the state, which only a weak back edge reaches.)
        output = new_state if len(outs) == 1 else C.reconcile_dynamic_axes(output, new_state)
        if until_predicate is not None:
            # Items up to and including the first one the predicate marks.
            valid = Recurrence(lambda h, x: (1 - C.sequence.past_value(x)) * h, initial_state=1)(
                until_predicate(output))
            output = C.sequence.gather(output, valid)
        return as_function(output)

    inner = placeholder(name='dynamic_axes_like')
    if initial_state is not None:
        return as_block(unfold_from(inner, initial_state), [(inner, placeholder(name='dynamic_axes_like'))],
                        'UnfoldFrom', name)
    seed = placeholder(name='initial_state')
    return as_block(unfold_from(inner, seed), [(seed, placeholder(name='initial_state')),
                                               (inner, placeholder(name='dynamic_axes_like'))], 'UnfoldFrom', name)


def ResNetBlock(f, name=''):
    """CNTK's ResNetBlock: f(x) + x, with f a layer or any Python function of one operand."""
    if not isinstance(f, Function):
        f = f(placeholder(name='x'))
    return _ResNetBlock(f, name)


def ForwardDeclaration(name='forward_declaration'):
    """CNTK's forward declaration for loops built by hand: a placeholder with a `resolve_to(var)` method
    that binds it, in the graph that computes `var`, to `var` (closing a recurrence through past_value)."""
    forward = placeholder(name=name)

    def resolve_to(var):
        if isinstance(var, Function):
            var.replace_placeholders({forward: var.output})
        else:
            var.owner.replace_placeholders({forward: var})

    forward.resolve_to = resolve_to
    return forward


def Delay(T=1, initial_state=0, name=''):
    """CNTK's Delay layer: x delayed by T steps along its sequence (T < 0: -T steps from the future;
    0: x itself), with initial_state where no step exists. (CNTK read initial_state from
    default_options; here it is an argument only.)"""
    from .ops import sequence as seq
    inner = placeholder(name='x')
    if T == 0:
        body = identity(inner)
    else:
        body = seq.delay(inner, initial_state=initial_state, time_step=T)
    return as_block(as_function(body), [(inner, placeholder())], 'Delay', name)


__all__ = ['Delay', 'identity', 'default_options', 'default_options_for', 'Dense', 'Convolution', 'SequentialConvolution', 'Convolution1D', 'Convolution2D',
           'Convolution3D', 'MaxPooling', 'AveragePooling', 'GlobalMaxPooling', 'GlobalAveragePooling',
           'Dropout', 'BatchNormalization', 'LayerNormalization', 'Embedding', 'Activation', 'Stabilizer',
           'Label', 'Sequential', 'ResNetBlock', 'SequentialClique', 'For', 'LSTM', 'GRU', 'RNNStep',
           'Recurrence', 'RecurrenceFrom', 'Fold', 'ConvolutionTranspose', 'ConvolutionTranspose1D', 'ConvolutionTranspose2D',
           'ConvolutionTranspose3D', 'MaxUnpooling', 'UnfoldFrom']


def PastValueWindow(window_size, axis, go_backwards=False, name=''):
    """CNTK's PastValueWindow: a sequence seen as a fixed window of its last `window_size` items (its
    first, with go_backwards), for attention over an encoder's steps. Two outputs: value, the items
    stacked along a new axis at `axis` (item t the one t steps from the end; zeros where the sequence
    is shorter), and valid, 1 where an item exists and 0 in the padding, shaped like value with the
    item's axes as one dim of 1."""
    from .ops import sequence as seq
    from . import ops
    if window_size < 1:
        raise ValueError('PastValueWindow: window_size must be at least 1, got %d' % window_size)
    inner = placeholder(name='x')
    ones = seq.broadcast_as(ops.constant(1.0), inner)  # 1 on every step of the sequence

    def item(v, t):  # the item t steps from the end (from the start with go_backwards); 0 if none
        shifted = v if t == 0 else seq.delay(v, time_step=-t if go_backwards else t)
        return seq.first(shifted) if go_backwards else seq.last(shifted)

    # CNTK spliced the items along `axis`: an axis the items do not have (e.g. -3 for vectors) is a new
    # one, the items stacked along it.
    value = ops.splice(*[item(inner, t) for t in range(window_size)], axis=axis)
    valid = ops.splice(*[ops.reshape(item(ones, t), (1,)) for t in range(window_size)], axis=axis)
    return as_block(combine([value, valid]), [(inner, placeholder())], 'PastValueWindow', name)


__all__.append('PastValueWindow')
