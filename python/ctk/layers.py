"""cntk.layers: the layers library. Layers are Functions with one placeholder: apply one with layer(x).
For is written in Python as in CNTK."""
import inspect

from ._ctk.layers import (identity, default_options, Dense, Convolution, Convolution1D,  # noqa: F401
                          Convolution2D, Convolution3D, MaxPooling, AveragePooling, GlobalMaxPooling,
                          GlobalAveragePooling, Dropout, BatchNormalization, LayerNormalization, Embedding,
                          Activation, Stabilizer, Label, Sequential, ResNetBlock, SequentialClique)


def For(what_range, constructor, name=''):
    """CNTK's For: Sequential([constructor(i) for i in what_range]); constructor may take no argument."""
    takes_arg = len(inspect.signature(constructor).parameters) > 0
    layers = [constructor(i) if takes_arg else constructor() for i in what_range]
    return Sequential(layers, name=name)


__all__ = ['identity', 'default_options', 'Dense', 'Convolution', 'Convolution1D', 'Convolution2D',
           'Convolution3D', 'MaxPooling', 'AveragePooling', 'GlobalMaxPooling', 'GlobalAveragePooling',
           'Dropout', 'BatchNormalization', 'LayerNormalization', 'Embedding', 'Activation', 'Stabilizer',
           'Label', 'Sequential', 'ResNetBlock', 'SequentialClique', 'For']
