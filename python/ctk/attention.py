"""CNTK's AttentionModel (cntk.layers.models.attention): additive attention (Bahdanau et al., "Neural
machine translation by jointly learning to align and translate") of a decoder state over the encoder's
states. As in CNTK, the encoder states are seen through a fixed window (PastValueWindow: the last
`attention_span` of them, stacked along the static axis `attention_axis`), which is broadcast to every
decoder step; the scores tanh(W_enc h_enc + W_dec h_dec) are projected to one number per window item,
items past the encoder's end get -50 before the softmax over the window, and the result is the
weighted sum of the window's states. Applied as attention(h_enc, h_dec); the weights are labelled
'attention_weights'. Every projection has no bias and a Stabilizer in front, and the result a last
Stabilizer (when enable_self_stabilization)."""
from ._ctk import as_block, placeholder
from ._ctk.layers import Dense, Label, Stabilizer
from .default_options import default_override_or, get_default_override
from .initializer import glorot_uniform
from .layers import PastValueWindow, Sequential


def AttentionModel(attention_dim, attention_span=None, attention_axis=None,
                   init=default_override_or(glorot_uniform()), go_backwards=default_override_or(False),
                   enable_self_stabilization=default_override_or(True), name=''):
    from . import ops
    from .ops import sequence as seq
    init = get_default_override(AttentionModel, init=init)
    go_backwards = get_default_override(AttentionModel, go_backwards=go_backwards)
    stabilize = get_default_override(AttentionModel, enable_self_stabilization=enable_self_stabilization)
    if attention_span is None or attention_axis is None:
        raise NotImplementedError('AttentionModel needs a fixed attention_span and a static attention_axis '
                                  '(as CNTK did)')
    if attention_span <= 0:
        raise ValueError('AttentionModel: attention_span must be a positive value, got %r' % (attention_span,))
    if not isinstance(attention_axis, int):
        raise ValueError('AttentionModel: attention_axis must be an int, got %r' % (attention_axis,))

    def projection(dim):  # keeps the window's axes: only the last axis is projected
        return Sequential([Stabilizer(enable_self_stabilization=stabilize),
                           Dense(dim, init=init, input_rank=1, bias=False)])
    project_encoder, project_decoder, project_score = projection(attention_dim), projection(attention_dim), \
        projection(1)
    final = Stabilizer(enable_self_stabilization=stabilize)

    h_enc, h_dec = placeholder(name='h_enc'), placeholder(name='h_dec')
    window = PastValueWindow(attention_span, axis=attention_axis, go_backwards=go_backwards)(h_enc)
    items, valid = window.outputs
    # The window, once per encoder sequence, seen from every step of the decoder's sequence.
    items_at_dec = seq.broadcast_as(items, h_dec)
    scores = project_score(ops.tanh(ops.plus(project_decoder(h_dec),
                                             seq.broadcast_as(project_encoder(items), h_dec))))
    masked = ops.plus(scores, ops.element_times(ops.minus(seq.broadcast_as(valid, h_dec), 1.0), 50.0))
    weights = Label('attention_weights')(ops.softmax(masked, axis=attention_axis))
    attended = final(ops.reduce_sum(ops.element_times(items_at_dec, weights), axis=attention_axis))
    return as_block(attended, [(h_enc, placeholder()), (h_dec, placeholder())], 'AttentionModel', name)


__all__ = ['AttentionModel']
