"""The attention decoder of CNTK's Sequence2Sequence example, end to end: the shapes CNTK inferred
through its loops (a Dense behind a state spliced with the input, an LSTM fed by attention over its own
past state, the greedy decoder's UnfoldFrom), its gradients against finite differences, and the ways
the example reads results (a tuple from a call with several outputs, an output inside a layer)."""
import numpy as np

import cntk as C
from cntk.layers import Dense, LSTM, Recurrence, Stabilizer, UnfoldFrom
from cntk.layers.models.attention import AttentionModel
from cntk.layers.typing import SequenceOver, Signature, Tensor

V = 5  # vocabulary of the decoder tests


def test_a_dense_layer_behind_the_state_spliced_with_the_input_is_inferred():
    x = C.sequence.input_variable(2)
    d = Dense(3, activation=C.tanh)
    y = Recurrence(lambda h, xt: d(C.splice(xt, Stabilizer(enable_self_stabilization=True)(h))))(x)
    assert y.shape == (3,)
    assert d.W.shape == (5, 3)  # [x; h] -> 3
    assert np.asarray(y.eval({x: np.ones((1, 4, 2), np.float32)})).shape == (1, 4, 3)


def _decoder(enc, x, hidden=4, attention_dim=3):
    lstm = LSTM(hidden, enable_self_stabilization=True)
    att = AttentionModel(attention_dim, 6, -3, init=C.glorot_uniform(seed=1), name='attention_model')

    @C.Function
    def step(dh, dc, xt):
        return lstm(dh, dc, C.splice(xt, att(enc, dh)))
    return Recurrence(step)(x), lstm, att


def test_an_lstm_fed_by_attention_over_its_own_state_is_inferred():
    enc = C.sequence.input_variable(6, sequence_axis=C.Axis('ia'))
    x = C.sequence.input_variable(3, sequence_axis=C.Axis('la'))
    y, lstm, att = _decoder(enc, x)
    # CNTK's shapes: the attention result is [1 x 1 x 6], spliced with x along its last axis.
    assert lstm.W.shape == (9, 16) and lstm.H.shape == (4, 16)
    assert sorted(p.shape for p in att.parameters if len(p.shape) == 2) == [(3, 1), (4, 3), (6, 3)]
    assert y.shape == (1, 1, 4)
    got = np.asarray(y.eval({x: np.ones((2, 5, 3), np.float32), enc: np.ones((2, 7, 6), np.float32)}))
    assert got.shape == (2, 5, 1, 1, 4)


def test_the_attention_decoders_gradients_match_finite_differences():
    # Sequences of different lengths on both axes: the loop's padded frames must not leak into the
    # gradients of operands whose rank differs from the op's output (the splice above).
    # (Layers are float32 in ctk: central differences with a step that float32 resolves.)
    enc = C.sequence.input_variable(6, sequence_axis=C.Axis('ia'))
    x = C.sequence.input_variable(3, sequence_axis=C.Axis('la'))
    y, lstm, _ = _decoder(enc, x)
    loss = C.reduce_sum(C.sequence.reduce_sum(C.square(y)))
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (4, 2)]
    es = [rng.standard_normal((n, 6)).astype(np.float32) for n in (3, 5)]
    args = {x: xs, enc: es}
    for p in (lstm.W, lstm.H):
        g = np.asarray(loss.grad(args, wrt=[p]))
        base = p.value.copy()
        for idx in [(0, 0), (2, 5), (p.shape[0] - 1, 15)]:
            bumped = base.copy()
            bumped[idx] += 1e-2
            p.value = bumped
            up = float(np.asarray(loss.eval(args)).sum())
            bumped[idx] -= 2e-2
            p.value = bumped
            down = float(np.asarray(loss.eval(args)).sum())
            p.value = base
            assert abs((up - down) / 2e-2 - g[idx]) < 2e-4 + 1e-3 * abs(g[idx]), (p.name, idx)


def _decode_model():
    encoder = Recurrence(LSTM(3), return_full_state=True)
    attention = AttentionModel(2, 4, -3, name='attention_model')
    cell, proj = LSTM(3), Dense(V)

    @C.Function
    def decode(history, input):
        encoded = encoder(input)

        @C.Function
        def step(dh, dc, xt):
            return cell(dh, dc, C.splice(xt, attention(encoded.outputs[0], dh)))
        return proj(Recurrence(step)(history))
    return decode


def _greedy_decoder(decode=None):
    decode = decode or _decode_model()
    start = C.Constant(np.eye(V, dtype=np.float32)[0])

    @C.Function
    @Signature(SequenceOver[C.Axis('inputAxis')][Tensor[V]])
    def greedy(input):
        unfold = UnfoldFrom(lambda history: decode(history, input) >> C.hardmax,
                            until_predicate=lambda w: w[..., V - 1], length_increase=1.5)
        return unfold(initial_state=start, dynamic_axes_like=input)
    return greedy


def test_the_greedy_decoder_unfolds_through_the_attention_loop():
    greedy = _greedy_decoder()
    assert greedy.shape == (V,)
    words = greedy(np.eye(V, dtype=np.float32)[[1, 2, 3, 1]][None])
    # At most 1.5 x 4 items, each one-hot, stopping after the first end marker.
    assert 1 <= len(words[0]) <= 6
    np.testing.assert_array_equal(np.asarray(words[0]).sum(axis=-1), 1)
    ends = np.flatnonzero(np.asarray(words[0])[:, V - 1])
    assert len(ends) == 0 or ends[0] == len(words[0]) - 1


def test_an_output_inside_a_layer_is_evaluated_beside_the_model_as_a_tuple():
    # CNTK's debug_attention: combine([model, model.attention_model.attention_weights]), called on data.
    greedy = _greedy_decoder()
    weights = greedy.attention_model.attention_weights
    q = C.combine([greedy, weights])
    words, p = q(np.eye(V, dtype=np.float32)[[1, 2, 3, 1]][None])
    assert np.asarray(words[0]).shape[-1] == V
    p = np.asarray(p[0])
    assert p.shape[1:] == (4, 1, 1)  # each decoder step: the weights over the 4-item window
    np.testing.assert_allclose(p.sum(axis=1), 1, rtol=1e-5)


def test_a_saved_and_loaded_decoder_decodes_as_before(tmp_path):
    # In a CNTK file sequence.broadcast_as is a ReconcileDynamicAxis; loaded, it must still be allowed
    # inside the greedy decoder's loop.
    decode = _decode_model()
    words = np.eye(V, dtype=np.float32)[[1, 2, 3, 1]][None]
    before = _greedy_decoder(decode)(words)
    decode.save(str(tmp_path / 'decode.model'))
    after = _greedy_decoder(C.Function.load(str(tmp_path / 'decode.model')))(words)
    np.testing.assert_array_equal(np.asarray(after[0]), np.asarray(before[0]))
