"""cntk.layers.layers: the basic layers."""
from ctk.layers import (Dense, Embedding, Convolution, Convolution1D, Convolution2D, Convolution3D, ConvolutionTranspose, ConvolutionTranspose1D, ConvolutionTranspose2D, ConvolutionTranspose3D, MaxPooling, AveragePooling, GlobalMaxPooling, GlobalAveragePooling, MaxUnpooling, Dropout, Activation, BatchNormalization, LayerNormalization, Label)  # noqa: F401

__all__ = ['Dense', 'Embedding', 'Convolution', 'Convolution1D', 'Convolution2D', 'Convolution3D', 'ConvolutionTranspose', 'ConvolutionTranspose1D', 'ConvolutionTranspose2D', 'ConvolutionTranspose3D', 'MaxPooling', 'AveragePooling', 'GlobalMaxPooling', 'GlobalAveragePooling', 'MaxUnpooling', 'Dropout', 'Activation', 'BatchNormalization', 'LayerNormalization', 'Label']
