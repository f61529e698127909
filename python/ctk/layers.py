"""cntk.layers: the layers library. Layers are Functions with one placeholder: apply one with layer(x).
For is written in Python as in CNTK."""
import inspect

from ._ctk import Function, as_block, as_function, combine, placeholder
from ._ctk.layers import (identity, default_options, Dense, Convolution, Convolution1D,  # noqa: F401
                          Convolution2D, Convolution3D, MaxPooling, AveragePooling, GlobalMaxPooling,
                          GlobalAveragePooling, Dropout, BatchNormalization, LayerNormalization, Embedding,
                          Activation, Stabilizer, Label, Sequential, ResNetBlock, SequentialClique, LSTM, GRU,
                          RNNStep, _recurrence, _recurrence_from, ConvolutionTranspose, ConvolutionTranspose1D,
                          ConvolutionTranspose2D, ConvolutionTranspose3D, MaxUnpooling)


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
    names = list(inspect.signature(step_function).parameters)
    args = [placeholder(name=n) for n in names]
    out = step_function(*args)
    if isinstance(out, (tuple, list)):
        out = combine(list(out))
    elif not isinstance(out, Function):
        out = as_function(out)
    return as_block(out, [(a, placeholder()) for a in args], 'StepFunction')


def Recurrence(step_function, go_backwards=False, initial_state=None, return_full_state=False, name=''):
    """CNTK's Recurrence: step_function(states..., x) along the sequence axis, states fed back through
    past_value (go_backwards: future_value) from initial_state (default 0)."""
    return _recurrence(_as_step_function(step_function), go_backwards, initial_state, return_full_state, False,
                       name)


def Fold(folder_function, go_backwards=False, initial_state=None, return_full_state=False, name=''):
    """CNTK's Fold: Recurrence, then the last step of the sequence (go_backwards: the first)."""
    return _recurrence(_as_step_function(folder_function), go_backwards, initial_state, return_full_state, True,
                       name)


def RecurrenceFrom(step_function, go_backwards=False, return_full_state=False, name=''):
    """CNTK's RecurrenceFrom: Recurrence whose initial states are given when it is applied,
    layer(s0, ..., x), e.g. a decoder started from an encoder's final state."""
    return _recurrence_from(_as_step_function(step_function), go_backwards, return_full_state, name)


__all__ = ['identity', 'default_options', 'Dense', 'Convolution', 'Convolution1D', 'Convolution2D',
           'Convolution3D', 'MaxPooling', 'AveragePooling', 'GlobalMaxPooling', 'GlobalAveragePooling',
           'Dropout', 'BatchNormalization', 'LayerNormalization', 'Embedding', 'Activation', 'Stabilizer',
           'Label', 'Sequential', 'ResNetBlock', 'SequentialClique', 'For', 'LSTM', 'GRU', 'RNNStep',
           'Recurrence', 'RecurrenceFrom', 'Fold', 'ConvolutionTranspose', 'ConvolutionTranspose1D', 'ConvolutionTranspose2D',
           'ConvolutionTranspose3D', 'MaxUnpooling']
