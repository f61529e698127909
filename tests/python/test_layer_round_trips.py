# Every layer and block of the layers library, in a small model, saved as CNTK v2 and as ONNX and loaded
# back computing the same; and a recurrent model's training restored from its checkpoint continuing
# bit-identically. Recurrent models saved as CNTK v2 could not be loaded back before.
import numpy as np
import pytest

import cntk as C
from cntk.layers import (Activation, AveragePooling, BatchNormalization, Convolution, Convolution1D,
                         Convolution2D, Convolution3D, ConvolutionTranspose, ConvolutionTranspose2D, Delay,
                         Dense, Dropout, Embedding, Fold, For, GlobalAveragePooling, GlobalMaxPooling, GRU,
                         Label, LayerNormalization, LSTM, MaxPooling, MaxUnpooling, Recurrence, RecurrenceFrom,
                         ResNetBlock, RNNStep, Sequential, SequentialClique, Stabilizer, UnfoldFrom, identity)

RNG = np.random.default_rng(7)


def dense_input(*shape):
    return C.input_variable(shape, name='x'), RNG.standard_normal((3,) + shape).astype(np.float32)


def sequence_input(dim):
    x = C.sequence.input_variable(dim, name='s')
    return x, [RNG.standard_normal((n, dim)).astype(np.float32) for n in (4, 2, 1)]


def on_dense(layer, *shape):
    def build():
        x, data = dense_input(*shape)
        return layer()(x), {x: data}
    return build


def on_sequence(layer, dim=3):
    def build():
        s, data = sequence_input(dim)
        return layer()(s), {s: data}
    return build


def two_pooled_inputs():
    x = C.input_variable((1, 4, 4), name='x')
    data = RNG.standard_normal((2, 1, 4, 4)).astype(np.float32)
    pooled = MaxPooling((2, 2), strides=2)(x)
    return MaxUnpooling((2, 2), strides=2)(pooled, x), {x: data}


def recurrence_from():
    s, data = sequence_input(3)
    h0 = C.input_variable(4, name='h0')
    z = RecurrenceFrom(GRU(4))(h0, s)
    return z, {s: data, h0: RNG.standard_normal((3, 4)).astype(np.float32)}


def unfold_from():
    s, data = sequence_input(3)
    return UnfoldFrom(lambda h: C.tanh(h * 0.5 + 0.1), initial_state=0.3)(s), {s: data}


# name -> (a builder of (model, {input: data}), ONNX): 'same' when the ONNX round trip computes the same,
# else the words of the NotImplementedError that export gives (docs/model_files.md lists what ONNX
# export leaves out: unpooling, a delay of more than one step, UnfoldFrom's generated sequence axis).
LAYERS = {
    'Dense': (on_dense(lambda: Dense(4, activation=C.relu), 5), 'same'),
    'Dense_map_rank': (on_dense(lambda: Dense(4, map_rank=1), 2, 5), 'same'),
    'Convolution': (on_dense(lambda: Convolution((3, 3), 2, pad=True), 1, 6, 6), 'same'),
    'Convolution1D': (on_dense(lambda: Convolution1D(3, 2, pad=True), 2, 8), 'same'),
    'Convolution2D': (on_dense(lambda: Convolution2D((3, 3), 2, strides=2), 1, 7, 7), 'same'),
    'Convolution3D': (on_dense(lambda: Convolution3D((2, 2, 2), 2), 1, 3, 4, 4), 'same'),
    'ConvolutionTranspose': (on_dense(lambda: ConvolutionTranspose((3, 3), 2, output_shape=(6, 6)), 1, 4, 4),
                             'same'),
    'ConvolutionTranspose2D': (on_dense(lambda: ConvolutionTranspose2D((2, 2), 2, strides=2), 1, 3, 3), 'same'),
    'MaxPooling': (on_dense(lambda: MaxPooling((2, 2), strides=2), 2, 4, 4), 'same'),
    'AveragePooling': (on_dense(lambda: AveragePooling((2, 2), pad=True), 2, 5, 5), 'same'),
    'GlobalMaxPooling': (on_dense(lambda: GlobalMaxPooling(), 2, 4, 4), 'same'),
    'GlobalAveragePooling': (on_dense(lambda: GlobalAveragePooling(), 2, 4, 4), 'same'),
    'MaxUnpooling': (two_pooled_inputs, 'unpooling'),
    'Dropout': (on_dense(lambda: Dropout(0.5), 5), 'same'),
    'BatchNormalization': (on_dense(lambda: BatchNormalization(), 2, 3, 3), 'same'),
    'LayerNormalization': (on_dense(lambda: LayerNormalization(), 6), 'same'),
    'Embedding': (on_dense(lambda: Embedding(4), 6), 'same'),
    'Activation': (on_dense(lambda: Activation(C.sigmoid), 5), 'same'),
    'Stabilizer': (on_dense(lambda: Stabilizer(), 5), 'same'),
    'Label': (on_dense(lambda: Sequential([Dense(3), Label('hidden')]), 5), 'same'),
    'identity': (on_dense(lambda: Sequential([identity, Dense(3)]), 5), 'same'),
    'Sequential': (on_dense(lambda: Sequential([Dense(4, activation=C.tanh), Dense(2)]), 5), 'same'),
    'For': (on_dense(lambda: For(range(3), lambda i: Dense(i + 2)), 5), 'same'),
    'ResNetBlock': (on_dense(lambda: ResNetBlock(Dense(5)), 5), 'same'),
    'SequentialClique': (on_dense(lambda: SequentialClique([Dense(5), Dense(5), Dense(5)]), 5), 'same'),
    'Recurrence_LSTM': (on_sequence(lambda: Recurrence(LSTM(6))), 'same'),
    'Recurrence_LSTM_peepholes_projection': (
        on_sequence(lambda: Recurrence(LSTM(4, cell_shape=5, use_peepholes=True, enable_self_stabilization=True))),
        'same'),
    'Recurrence_GRU': (on_sequence(lambda: Recurrence(GRU(4))), 'same'),
    'Recurrence_RNNStep_backwards': (on_sequence(lambda: Recurrence(RNNStep(4), go_backwards=True)), 'same'),
    'Recurrence_lambda': (on_sequence(lambda: Recurrence(lambda h, x: C.tanh(h * 0.5 + x))), 'same'),
    'Recurrence_full_state': (on_sequence(lambda: Recurrence(LSTM(3), return_full_state=True)), 'same'),
    'Recurrence_initial_state': (on_sequence(lambda: Recurrence(GRU(3), initial_state=0.5)), 'same'),
    'Fold': (on_sequence(lambda: Fold(GRU(4))), 'same'),
    'RecurrenceFrom': (recurrence_from, 'same'),
    'UnfoldFrom': (unfold_from, 'reconcile_dynamic_axes'),
    'Delay': (on_sequence(lambda: Delay(T=1, initial_state=0.25)), 'same'),
    'Delay_2': (on_sequence(lambda: Delay(T=2, initial_state=0.25)), 'an offset of 2'),
    'stacked_recurrences': (on_sequence(lambda: Sequential([Embedding(5), Recurrence(LSTM(4)),
                                                            Recurrence(GRU(3), go_backwards=True), Dense(2)])),
                            'same'),
}


def evaluate(model, data):
    """The model's outputs for data keyed by input name (a loaded model has its own Variables)."""
    by_name = {v.name: d for v, d in data.items()}
    args = {a: by_name[a.name] for a in model.arguments}
    out = model.eval(args)
    if isinstance(out, dict):
        return [out[o] for o in model.outputs]
    return [out]


def assert_same(a, b, exact):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        xs = x if isinstance(x, list) else [x]
        ys = y if isinstance(y, list) else [y]
        assert len(xs) == len(ys)
        for u, v in zip(xs, ys):
            if exact:
                np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
            else:
                np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('name', sorted(LAYERS))
def test_layer_round_trips_through_cntk_v2(name, tmp_path):
    model, data = LAYERS[name][0]()
    expected = evaluate(model, data)
    path = str(tmp_path / 'model.dnn')
    model.save(path)
    loaded = C.load_model(path)
    assert len(loaded.parameters) == len(model.parameters)
    assert_same(expected, evaluate(loaded, data), exact=True)
    # Saved again, the loaded model loads again.
    loaded.save(path)
    assert_same(expected, evaluate(C.load_model(path), data), exact=True)


@pytest.mark.parametrize('name', sorted(LAYERS))
def test_layer_round_trips_through_onnx(name, tmp_path):
    build, onnx = LAYERS[name]
    model, data = build()
    expected = evaluate(model, data)
    path = str(tmp_path / 'model.onnx')
    if onnx != 'same':
        with pytest.raises(NotImplementedError, match=onnx):
            model.save(path, format=C.ModelFormat.ONNX)
        return
    model.save(path, format=C.ModelFormat.ONNX)
    loaded = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert_same(expected, evaluate(loaded, data), exact=False)


def lstm_trainer():
    s = C.sequence.input_variable(3, name='s')
    y = C.input_variable(2, name='y')
    z = Sequential([Recurrence(LSTM(5)), C.sequence.last, Dense(2)])(s)
    loss = C.cross_entropy_with_softmax(z, y)
    metric = C.classification_error(z, y)
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9))
    return s, y, z, C.Trainer(z, (loss, metric), [learner])


def lstm_batches():
    rng = np.random.default_rng(11)
    out = []
    for _ in range(6):
        seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (5, 3, 4, 2)]
        labels = np.eye(2, dtype=np.float32)[[int(q.sum() > 0) for q in seqs]]
        out.append((seqs, labels))
    return out


def test_lstm_training_continues_bit_identically_from_its_checkpoint(tmp_path):
    batches = lstm_batches()
    s, y, z, trainer = lstm_trainer()
    for seqs, labels in batches[:3]:
        trainer.train_minibatch({s: seqs, y: labels})
    path = str(tmp_path / 'lstm.model')
    trainer.save_checkpoint(path)
    losses = []
    for seqs, labels in batches[3:]:
        trainer.train_minibatch({s: seqs, y: labels})
        losses.append(trainer.previous_minibatch_loss_average)
    final = [p.value.copy() for p in z.parameters]

    # A fresh trainer (other initial weights) restored from the checkpoint takes the same steps.
    s2, y2, z2, restored = lstm_trainer()
    restored.restore_from_checkpoint(path)
    again = []
    for seqs, labels in batches[3:]:
        restored.train_minibatch({s2: seqs, y2: labels})
        again.append(restored.previous_minibatch_loss_average)
    assert again == losses
    for a, b in zip(final, [p.value for p in z2.parameters]):
        np.testing.assert_array_equal(a, b)
    # The checkpoint's model file is a CNTK v2 model of the LSTM.
    loaded = C.load_model(path)
    assert len(loaded.parameters) == len(z.parameters)


def write_sequence_ctf(path):
    """24 sequences of 4 frames, a label per frame: a sweep is 96 samples, taken as minibatches of 20 (the
    fifth runs on into the second sweep, as CNTK's did), so a run stopped after 100 samples took the same
    minibatches as one that went on (a stop elsewhere cuts its last minibatch short, as CNTK's did)."""
    rng = np.random.default_rng(5)
    lines = []
    for seq in range(24):
        frames = rng.standard_normal((4, 3))
        for t in range(4):
            label = int(frames[:t + 1].sum() > 0)
            feats = ' '.join('%.5f' % v for v in frames[t])
            lines.append('%d |x %s |y %d %d' % (seq, feats, 1 - label, label))
    path.write_text('\n'.join(lines) + '\n')


def lstm_session(ctf, checkpoint, max_samples, restore):
    C.cntk_py.set_fixed_random_seed(3)  # the same initial weights in every run
    s = C.sequence.input_variable(3, name='s')
    y = C.sequence.input_variable(2, name='y')
    z = Sequential([Recurrence(LSTM(5)), Dense(2)])(s)
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)), [learner])
    src = C.io.MinibatchSource(C.io.CTFDeserializer(str(ctf), C.io.StreamDefs(
        x=C.io.StreamDef(field='x', shape=3), y=C.io.StreamDef(field='y', shape=2))),
        randomize=True, max_sweeps=C.io.INFINITELY_REPEAT)
    C.train.training_session(trainer=trainer, mb_source=src, mb_size=20,
                             model_inputs_to_streams={s: src.streams.x, y: src.streams.y},
                             max_samples=max_samples,
                             checkpoint_config=C.train.CheckpointConfig(str(checkpoint), frequency=60,
                                                                        restore=restore)).train()
    assert trainer.total_number_of_samples_seen == max_samples
    return [p.value for p in z.parameters]


def test_training_session_restores_an_lstm_from_its_checkpoint(tmp_path):
    ctf = tmp_path / 'seq.ctf'
    write_sequence_ctf(ctf)
    straight = lstm_session(ctf, tmp_path / 'a' / 'lstm', 192, restore=False)
    lstm_session(ctf, tmp_path / 'b' / 'lstm', 100, restore=False)  # stopped early in the second sweep
    resumed = lstm_session(ctf, tmp_path / 'b' / 'lstm', 192, restore=True)
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a, b)
