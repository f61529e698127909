# cntk.debugging's profiler over ctk's op profile: nothing is timed between start_profiler and
# enable_profiler, the summary names the ops and the steps, a training_session enables it itself after its
# first sweep, and the imports CNTK's example scripts make at their top (start_profiler, stop_profiler,
# enable_profiler, set_computation_network_trace_level) all resolve.
import os

import numpy as np
import pytest

import cntk as C
from cntk.debugging import (start_profiler, stop_profiler, enable_profiler, disable_profiler,  # noqa: F401
                            set_computation_network_trace_level)
from cntk.io import MinibatchSource, CTFDeserializer, StreamDef, StreamDefs, INFINITELY_REPEAT


def model():
    x = C.input_variable(2)
    y = C.input_variable(2)
    z = C.layers.Dense(2, activation=C.relu)(x)
    return x, y, z, C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                              [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])


def steps(trainer, x, y, n):
    xs = np.array([[1, 0], [0, 1]], np.float32)
    for _ in range(n):
        trainer.train_minibatch({x: xs, y: xs})


def repeating_source(tmp_path, samples):
    """A CTF file of `samples` two-class samples, read in order and repeated without end."""
    lines = ['|labels %s |features %f %f' % ('1 0' if i % 2 else '0 1', i % 3, i % 5) for i in range(samples)]
    data = tmp_path / 'data.ctf'
    data.write_text('\n'.join(lines) + '\n')
    return MinibatchSource(CTFDeserializer(str(data), StreamDefs(
        features=StreamDef(field='features', shape=2), labels=StreamDef(field='labels', shape=2))),
        randomize=False, max_sweeps=INFINITELY_REPEAT)


def train_session(trainer, src, x, y, **kwargs):
    C.train.training_session(trainer=trainer, mb_source=src, mb_size=8,
                             model_inputs_to_streams={x: src.streams.features, y: src.streams.labels},
                             max_samples=48, **kwargs).train()


def summary_of(path):
    assert path is not None and os.path.isfile(path), path
    assert os.path.basename(path).endswith('_summary_0.txt')
    with open(path) as f:
        return f.read()


def test_the_summary_counts_only_the_enabled_steps(tmp_path):
    x, y, z, trainer = model()
    start_profiler(dir=str(tmp_path / 'prof'), sync_gpu=True)
    steps(trainer, x, y, 2)  # started, not enabled: not timed
    enable_profiler()
    steps(trainer, x, y, 3)
    text = summary_of(stop_profiler())
    assert 'over 3 steps' in text
    for op in ('train_minibatch whole step', 'times forward', 'times backward', 'relu forward',
               'learners update'):
        assert op in text, text
    assert not [f for f in os.listdir(tmp_path / 'prof') if f.endswith('.tmp')]


def test_stop_without_start_writes_nothing():
    assert stop_profiler() is None


def test_disable_pauses_timing(tmp_path):
    x, y, z, trainer = model()
    start_profiler(dir=str(tmp_path))
    enable_profiler()
    steps(trainer, x, y, 1)
    disable_profiler()
    steps(trainer, x, y, 2)
    assert 'over 1 steps' in summary_of(stop_profiler())


def test_training_session_enables_it_after_its_first_sweep(tmp_path):
    src = repeating_source(tmp_path, 16)
    x, y, z, trainer = model()
    start_profiler(dir=str(tmp_path / 'p'))
    # 48 samples in minibatches of 8: the first sweep ends at step 2, so steps 3 to 6 are timed.
    train_session(trainer, src, x, y)
    assert 'over 4 steps' in summary_of(stop_profiler())


def test_the_trace_level_is_accepted(capfd):
    set_computation_network_trace_level(0)
    assert capfd.readouterr().err == ''
    set_computation_network_trace_level(1)
    assert 'no trace' in capfd.readouterr().err
    set_computation_network_trace_level(0)
    with pytest.raises(ValueError):
        set_computation_network_trace_level(-1)


def test_the_profiler_module_path():
    import cntk.debugging.profiler as profiler
    assert profiler.start_profiler is start_profiler


def test_training_session_enables_it_after_its_first_checkpoint(tmp_path):
    src = repeating_source(tmp_path, 64)
    x, y, z, trainer = model()
    start_profiler(dir=str(tmp_path / 'p'))
    # A checkpoint every 24 samples in minibatches of 8: the first after step 3, so steps 4 to 6 are timed
    # (the sweep of 64 samples does not end within the 48).
    train_session(trainer, src, x, y,
                  checkpoint_config=C.train.CheckpointConfig(str(tmp_path / 'ck'), frequency=24))
    assert 'over 3 steps' in summary_of(stop_profiler())


def test_training_session_with_only_a_final_checkpoint_enables_it_after_its_first_sweep(tmp_path):
    src = repeating_source(tmp_path, 16)
    x, y, z, trainer = model()
    start_profiler(dir=str(tmp_path / 'p'))
    train_session(trainer, src, x, y, checkpoint_config=C.train.CheckpointConfig(str(tmp_path / 'ck')))
    assert 'over 4 steps' in summary_of(stop_profiler())


def test_two_summaries_in_one_second_are_two_files(tmp_path):
    x, y, z, trainer = model()
    paths = []
    for _ in range(2):
        start_profiler(dir=str(tmp_path))
        enable_profiler()
        steps(trainer, x, y, 1)
        paths.append(stop_profiler())
    assert paths[0] != paths[1] and all(os.path.isfile(p) for p in paths)
