"""CNTK's attention decoder as its Sequence2Sequence example builds it: AttentionModel against a NumPy
reference, a @Function step closing over the encoder's output inside Recurrence, Sequential's tuple of
one-operand layers after a two-output recurrence, and splice along a new axis."""
import numpy as np
import pytest

import cntk as C
from cntk.layers import Sequential, Stabilizer, Dense, Recurrence, LSTM, Label
from cntk.layers.models.attention import AttentionModel


def _softmax(u, axis):
    e = np.exp(u - u.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_attention_model_matches_a_numpy_reference():
    enc = C.sequence.input_variable(3, sequence_axis=C.Axis('inputAxis'), name='enc')
    dec = C.sequence.input_variable(2, sequence_axis=C.Axis('labelAxis'), name='dec')
    att = AttentionModel(4, attention_span=5, attention_axis=-3, enable_self_stabilization=False,
                         init=C.glorot_uniform(seed=3), name='att')
    y = att(enc, dec)
    assert y.shape == (1, 1, 3)
    rng = np.random.default_rng(0)
    e = rng.standard_normal((1, 3, 3)).astype(np.float32)  # an encoder sequence of 3 (shorter than the span)
    d = rng.standard_normal((1, 2, 2)).astype(np.float32)  # a decoder sequence of 2
    got = y.eval({enc: e, dec: d})[0].reshape(2, 3)
    params = y.parameters  # [2, 4] decoder, [3, 4] encoder, [4, 1] score projections
    w_dec = next(p.value for p in params if p.shape == (2, 4))
    w_enc = next(p.value for p in params if p.shape == (3, 4))
    w_score = next(p.value for p in params if p.shape == (4, 1))
    assert len(params) == 3
    window = e[0][::-1]  # the last item first: item t is t steps from the end
    valid = np.array([1, 1, 1, 0, 0], np.float32)
    items = np.concatenate([window, np.zeros((2, 3), np.float32)])
    for step in range(2):
        u = (np.tanh(d[0, step] @ w_dec + items @ w_enc) @ w_score)[:, 0] + (valid - 1) * 50
        want = _softmax(u, 0) @ items
        np.testing.assert_allclose(got[step], want, rtol=1e-5, atol=1e-6)


def test_attention_model_rejects_cntks_bad_arguments():
    with pytest.raises(NotImplementedError):
        AttentionModel(4)
    with pytest.raises(ValueError):
        AttentionModel(4, 0, -3)
    with pytest.raises(ValueError):
        AttentionModel(4, 3, 'x')


def test_a_step_function_closing_over_an_enclosing_functions_input():
    # As Sequence2Sequence.py's decoder: the step reads a placeholder of the enclosing `decode` (the
    # encoder's input). Recurrence counts the step's declared parameters only, and the placeholder it
    # closes over is bound with decode's.
    scale = C.layers.Dense(1, bias=False, init=C.glorot_uniform(seed=1))

    @C.Function
    def decode(history, input):
        context = C.sequence.last(input)

        @C.Function
        def step(h, x):
            # broadcast_as to the loop's state: inside the loop, once per frame
            seen = C.sequence.broadcast_as(scale(context), h)
            return C.tanh(C.plus(C.element_times(h, 0.5), C.plus(x, seen)))
        return C.layers.Recurrence(step)(history)

    x = C.sequence.input_variable(2, sequence_axis=C.Axis('inputAxis'), name='x')
    h = C.sequence.input_variable(1, sequence_axis=C.Axis('labelAxis'), name='h')
    z = decode(h, x)
    assert z.shape == (1,)
    xs = np.arange(8, dtype=np.float32).reshape(1, 4, 2) / 8
    hs = np.ones((1, 3, 1), np.float32)
    got = np.asarray(z.eval({x: xs, h: hs})).reshape(3)
    c = float(xs[0, -1] @ scale.W.value[:, 0])
    state, want = 0.0, []
    for t in range(3):
        state = np.tanh(0.5 * state + hs[0, t, 0] + c)
        want.append(state)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_sequential_pairs_a_tuple_of_one_operand_layers_with_the_outputs():
    x = C.sequence.input_variable(2)
    enc = Sequential([Recurrence(LSTM(3), return_full_state=True), (Label('encoded_h'), Label('encoded_c'))])(x)
    assert len(enc.outputs) == 2 and enc.outputs[0].shape == (3,) and enc.outputs[1].shape == (3,)
    got = enc.eval({x: np.arange(6, dtype=np.float32).reshape(1, 3, 2)})
    assert len(got) == 2


def test_splice_along_a_new_leading_axis():
    a = C.input_variable(3)
    b = C.input_variable(3)
    s = C.splice(a, b, axis=-3)
    assert s.shape == (2, 1, 3)
    got = s.eval({a: np.ones((1, 3), np.float32), b: np.zeros((1, 3), np.float32)})
    np.testing.assert_array_equal(got[0], [[[1, 1, 1]], [[0, 0, 0]]])


def test_self_stabilized_layers_built_before_their_input_is_known():
    # CNTK's LanguageUnderstanding model (default_options(enable_self_stabilization=True), Stabilizers
    # around Recurrence(LSTM)) typed afterwards with update_signature: a Stabilizer's learnt scalar must
    # not be taken for the shape of what it scales, nor an LSTM's bias give its state a shape without the
    # sequence's axes.
    from cntk.layers import Embedding, Stabilizer, Recurrence, LSTM, RNNStep, Dense, Sequential, default_options
    from cntk.layers.typing import Sequence, Tensor
    for make, shape in [(lambda: [Embedding(8), Stabilizer(), Recurrence(LSTM(4)), Dense(3)], (3,)),
                        (lambda: [Embedding(8), Recurrence(LSTM(4)), Stabilizer(), Dense(3)], (3,)),
                        (lambda: [Stabilizer(), Recurrence(LSTM(4))], (4,)),
                        (lambda: [Stabilizer(), Recurrence(RNNStep(4))], (4,))]:
        with default_options(enable_self_stabilization=True):
            model = Sequential(make())
        model.update_signature(Sequence[Tensor[12]])
        assert model.shape == shape
        out = model.eval({model.arguments[0]: np.ones((1, 3, 12), np.float32)})
        assert np.asarray(out).shape == (1, 3) + shape
    x = C.input_variable(6)
    p = C.placeholder()
    y = Sequential([Stabilizer(enable_self_stabilization=True), Dense(4, bias=False)])(p)
    y = y.replace_placeholders({p: x})
    assert y.shape == (4,) and sorted(q.shape for q in y.parameters) == [(), (6, 4)]


def test_function_composition_indexing_and_unfold_with_a_seed_argument():
    # CNTK's `f >> hardmax`, `w[..., k]` (also on a Function whose shape is not known yet) and
    # UnfoldFrom(...)(initial_state=..., dynamic_axes_like=...), as Sequence2Sequence.py's greedy decoder.
    x = C.input_variable((2, 5))
    assert x[1:3].shape == (1, 5) and x[..., 0].shape == (2, 1) and x[0, ::2].shape == (1, 3)
    data = np.arange(10, dtype=np.float32).reshape(1, 2, 5)
    np.testing.assert_array_equal(x[..., 1:4].eval({x: data})[0], data[0][:, 1:4])
    np.testing.assert_array_equal(x[..., -1].eval({x: data})[0], data[0][:, 4:5])
    p = C.placeholder()
    assert p[..., 1].replace_placeholders({p: x}).shape == (2, 1)
    with pytest.raises(IndexError):
        x[0, 0, 0]
    composed = C.times(x, C.constant(np.eye(5, dtype=np.float32))) >> C.hardmax
    # (hardmax over all static axes, as CNTK: one 1 at the largest of the ten)
    np.testing.assert_array_equal(composed.eval({x: data})[0], [[0, 0, 0, 0, 0], [0, 0, 0, 0, 1]])
    s = C.sequence.input_variable(3)
    w = np.random.default_rng(3).standard_normal((3, 3)).astype(np.float32)
    start = np.eye(3, dtype=np.float32)[0]
    unfold = C.layers.UnfoldFrom(lambda word: C.times(word, C.constant(w)) >> C.hardmax)
    words = unfold(initial_state=C.constant(start), dynamic_axes_like=s).eval({s: [np.zeros((4, 3), np.float32)]})
    want, cur = [], start
    for _ in range(4):
        cur = np.eye(3, dtype=np.float32)[np.argmax(cur @ w)]
        want.append(cur)
    np.testing.assert_array_equal(words[0], want)
