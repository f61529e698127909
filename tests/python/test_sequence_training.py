"""A slot tagger in the shape of CNTK's LanguageUnderstanding example, end to end on a tiny CTF file the
test writes: sparse word and label streams through the CTF reader, Embedding, Stabilizer,
Recurrence(LSTM), Dense, cross entropy and classification error on class-index labels. The LSTM runs
as the fused recurrent kernel (the op profile says so) and gives the frame-by-frame path's losses."""
import numpy as np

import cntk as C
from ctk import _ctk

WORDS, SLOTS = 12, 5


def _write_ctf(path, sequences=40, seed=0):
    # The slot of a word is its class mod SLOTS, except after word 0 (a "from" that marks a city).
    rng = np.random.default_rng(seed)
    with open(path, 'w') as f:
        for s in range(sequences):
            words = rng.integers(0, WORDS, size=rng.integers(2, 9))
            for i, w in enumerate(words):
                slot = 4 if i > 0 and words[i - 1] == 0 else w % (SLOTS - 1)
                f.write('%d\t|S0 %d:1\t|S2 %d:1\n' % (s, w, slot))


def _train(path, steps=25):
    C.cntk_py.set_fixed_random_seed(1)
    reader = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        query=C.io.StreamDef(field='S0', shape=WORDS, is_sparse=True),
        slot_labels=C.io.StreamDef(field='S2', shape=SLOTS, is_sparse=True))), randomize=False)
    x = C.sequence.input_variable(WORDS, is_sparse=True)
    y = C.sequence.input_variable(SLOTS, is_sparse=True)
    with C.layers.default_options(enable_self_stabilization=True):
        z = C.layers.Sequential([C.layers.Embedding(8), C.layers.Stabilizer(),
                                 C.layers.Recurrence(C.layers.LSTM(16)), C.layers.Dense(SLOTS)])(x)
    loss, err = C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)
    learner = C.adam(z.parameters, C.learning_parameter_schedule_per_sample(0.02), C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (loss, err), [learner])
    losses = []
    for _ in range(steps):
        mb = reader.next_minibatch(60)
        trainer.train_minibatch({x: mb[reader.streams.query], y: mb[reader.streams.slot_labels]})
        losses.append(trainer.previous_minibatch_loss_average)
    return losses


def test_slot_tagger_trains_through_the_fused_lstm(tmp_path):
    path = str(tmp_path / 'slots.ctf')
    _write_ctf(path)
    _ctk._node_timing_start()
    fused = _train(path)
    _ctk._node_timing_stop()
    report = _ctk._node_timing_report()
    assert 'fused recurrent loop forward' in report and 'fused recurrent loop backward' in report
    assert np.mean(fused[-5:]) < 0.6 * np.mean(fused[:5])
    _ctk.set_fused_recurrence(False)
    try:
        general = _train(path)
    finally:
        _ctk.set_fused_recurrence(True)
    np.testing.assert_allclose(fused, general, rtol=2e-4)
