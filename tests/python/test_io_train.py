# Readers and training from Python: a CTF file written by the test, next_minibatch with and without an
# input map, Trainer steps with NumPy and reader data, training_session, ProgressPrinter (its C++ stdout read
# with capfd) and the error mapping of C++ exceptions.
import numpy as np
import pytest

import cntk as C
from cntk.io import MinibatchSource, CTFDeserializer, StreamDef, StreamDefs, INFINITELY_REPEAT, FULL_DATA_SWEEP
from cntk.logging import ProgressPrinter


@pytest.fixture
def ctf_file(tmp_path):
    rng = np.random.default_rng(1)
    lines = []
    for i in range(40):
        label = i % 2
        x = rng.standard_normal(2) + (2 if label else -2)
        onehot = ' '.join('1' if j == label else '0' for j in range(2))
        lines.append('|labels %s |features %f %f' % (onehot, x[0], x[1]))
    path = tmp_path / 'data.ctf'
    path.write_text('\n'.join(lines) + '\n')
    return str(path)


def make_source(path, sweeps=1, randomize=False):
    return MinibatchSource(CTFDeserializer(path, StreamDefs(
        features=StreamDef(field='features', shape=2), labels=StreamDef(field='labels', shape=2))),
        randomize=randomize, max_sweeps=sweeps)


def test_ctf_reading(ctf_file):
    src = make_source(ctf_file)
    assert src.streams.features.name == 'features'
    mb = src.next_minibatch(16)
    assert mb[src.streams.features].num_samples == 16
    assert mb[src.streams.labels].asarray().shape[0] == 16
    x = C.input_variable(2)
    mb = src.next_minibatch(100, input_map={x: src.streams.features})
    assert list(mb.keys()) == [x] and mb[x].num_samples == 24 and mb[x].end_of_sweep
    assert src.next_minibatch(10) == {}
    assert INFINITELY_REPEAT > FULL_DATA_SWEEP > 0


def test_next_minibatch_device(ctf_file):
    on_cpu = make_source(ctf_file).next_minibatch(8, device=C.device.cpu())
    with pytest.raises(TypeError, match='DeviceDescriptor'):
        make_source(ctf_file).next_minibatch(8, device='gpu')
    for d in C.device.all_devices():
        src = make_source(ctf_file)
        mb = src.next_minibatch(8, device=d)
        np.testing.assert_array_equal(mb[src.streams.features].asarray(),
                                      on_cpu[src.streams.features].asarray())


def model_and_criteria():
    x = C.input_variable(2)
    y = C.input_variable(2)
    z = C.layers.Dense(2, activation=None)(x)
    return x, y, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)


def test_trainer_step_with_numpy():
    x, y, z, ce, pe = model_and_criteria()
    trainer = C.Trainer(z, (ce, pe), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    xs = np.array([[1, 0], [0, 1]], np.float32)
    ys = np.array([[1, 0], [0, 1]], np.float32)
    w_before = z.W.value
    assert trainer.train_minibatch({x: xs, y: ys})
    assert trainer.previous_minibatch_sample_count == 2
    assert not np.allclose(w_before, z.W.value)
    assert 0 <= trainer.test_minibatch({x: xs, y: ys}) <= 1


def test_train_minibatch_fetches_outputs_before_the_update():
    x, y, z, ce, pe = model_and_criteria()
    trainer = C.Trainer(z, (ce, pe), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    xs = np.array([[1, 0], [0, 1]], np.float32)
    ys = np.array([[1, 0], [0, 1]], np.float32)
    expected = z.eval({x: xs})
    updated, out = trainer.train_minibatch({x: xs, y: ys}, outputs=[z.output, ce])
    assert updated and set(out.keys()) == {z.output, ce.output}
    np.testing.assert_allclose(out[z.output], expected, rtol=1e-6)
    assert out[ce.output].shape == (2, 1)
    assert not np.allclose(z.eval({x: xs}), expected)  # the update happened after the fetch


def test_trainer_on_reader_data_learns(ctf_file, capfd):
    x, y, z, ce, pe = model_and_criteria()
    src = make_source(ctf_file, sweeps=INFINITELY_REPEAT, randomize=True)
    printer = ProgressPrinter(tag='Training', num_epochs=2)
    trainer = C.Trainer(z, (ce, pe), C.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.1)), [printer])
    input_map = {x: src.streams.features, y: src.streams.labels}
    for epoch in range(2):
        for _ in range(4):
            trainer.train_minibatch(src.next_minibatch(10, input_map=input_map))
        trainer.summarize_training_progress()
    out = capfd.readouterr().out
    assert 'Finished Epoch[2 of 2]: [Training] loss = ' in out
    test = make_source(ctf_file)
    assert trainer.test_minibatch(test.next_minibatch(40, input_map={x: test.streams.features,
                                                                     y: test.streams.labels})) < 0.2


def test_training_session(ctf_file, capfd):
    x, y, z, ce, pe = model_and_criteria()
    src = make_source(ctf_file, sweeps=INFINITELY_REPEAT, randomize=True)
    trainer = C.Trainer(z, (ce, pe), C.adadelta(z.parameters), [ProgressPrinter(tag='Training', num_epochs=2)])
    C.train.training_session(trainer=trainer, mb_source=src, mb_size=8,
                             model_inputs_to_streams={x: src.streams.features, y: src.streams.labels},
                             max_samples=80, progress_frequency=40).train()
    assert trainer.total_number_of_samples_seen == 80
    assert 'Finished Epoch[2 of 2]' in capfd.readouterr().out


def test_cross_validation_callback_gets_cntks_four_arguments(ctf_file):
    # CNTK's on_cross_validation_end(index, average_error, num_samples, num_minibatches); False stops.
    x, y, z, ce, pe = model_and_criteria()
    src = make_source(ctf_file, sweeps=INFINITELY_REPEAT)
    calls = []

    def callback(index, average_error, num_samples, num_minibatches):
        calls.append((index, average_error, num_samples, num_minibatches))
        return index < 1

    trainer = C.Trainer(z, (ce, pe), C.sgd(z.parameters, 0.1))
    cv = C.train.CrossValidationConfig(make_source(ctf_file), frequency=16, minibatch_size=16, callback=callback)
    C.train.training_session(trainer=trainer, mb_source=src, mb_size=8,
                             model_inputs_to_streams={x: src.streams.features, y: src.streams.labels},
                             max_samples=160, cv_config=cv).train()
    assert [c[0] for c in calls] == [0, 1]  # the second callback said stop
    assert all(c[2] == 40 and c[3] == 3 and 0 <= c[1] <= 1 for c in calls)
    assert trainer.total_number_of_samples_seen == 32


def test_training_session_with_a_minibatch_size_schedule(ctf_file):
    x, y, z, ce, pe = model_and_criteria()
    src = make_source(ctf_file, sweeps=INFINITELY_REPEAT)

    class Sizes(C.logging.ProgressWriter):
        def __init__(self):
            super().__init__(freq=1)
            self.sizes = []

        def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
            self.sizes.append(samples[1] - samples[0])

    rec = Sizes()
    trainer = C.Trainer(z, (ce, pe), C.sgd(z.parameters, 0.1), [rec])
    # 4-sample minibatches for the first 8 samples, then 8-sample ones.
    C.train.training_session(trainer=trainer, mb_source=src, mb_size=C.minibatch_size_schedule([(2, 4), (1, 8)], 4),
                             model_inputs_to_streams={x: src.streams.features, y: src.streams.labels},
                             max_samples=32).train()
    assert rec.sizes == [4, 4, 8, 8, 8]
    with pytest.raises(ValueError, match="whole numbers"):
        C.train.training_session(trainer=trainer, mb_source=src, mb_size=C.minibatch_size_schedule([4, 0.5]),
                                 model_inputs_to_streams={x: src.streams.features, y: src.streams.labels})


def test_error_mapping(tmp_path):
    x = C.input_variable(3)
    with pytest.raises(ValueError, match='3'):
        C.plus(x, C.input_variable(4))  # shapes that do not broadcast
    with pytest.raises(ValueError):
        C.relu(x).eval({x: np.ones((2, 5), np.float32)})
    with pytest.raises(OSError):
        make_source(str(tmp_path / 'missing.ctf'))
    with pytest.raises(TypeError):
        C.relu('not a variable')
    with pytest.raises(NotImplementedError):  # a layer option ctk's layers do not take yet
        C.layers.default_options(dtype=np.float64)


def test_tensorboard_progress_writer(tmp_path):
    x = C.input_variable(2)
    y = C.input_variable(2)
    z = C.layers.Dense(2)(x)
    writer = C.logging.TensorBoardProgressWriter(freq=1, log_dir=str(tmp_path), model=z)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))], [writer])
    data = np.eye(2, dtype=np.float32)
    for _ in range(3):
        trainer.train_minibatch({x: data, y: data})
    trainer.summarize_training_progress()
    writer.write_value('custom', 1.5, 4)
    writer.flush()
    writer.close()
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.startswith('events.out.tfevents.')
    assert files[0].stat().st_size > 100
    assert b'minibatch/avg_loss' in files[0].read_bytes() and b'summary/avg_metric' in files[0].read_bytes()
    with pytest.raises(RuntimeError):
        writer.flush()


class Recorder(C.logging.ProgressWriter):
    """A progress writer in Python, as CNTK scripts write them."""

    def __init__(self):
        super().__init__(freq=2)
        self.updates, self.summaries, self.values = [], [], []

    def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
        self.updates.append((samples, updates, aggregate_loss, aggregate_metric))

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss, aggregate_metric,
                                  elapsed_milliseconds):
        self.summaries.append((samples, updates, summaries, aggregate_loss, aggregate_metric))

    def write(self, key, value):
        self.values.append((key, value))


def test_python_progress_writer_gets_cntks_calls():
    x, y, z, ce, pe = model_and_criteria()
    rec = Recorder()
    trainer = C.Trainer(z, (ce, pe), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))], [rec])
    xs = np.array([[1, 0], [0, 1]], np.float32)
    ys = np.array([[1, 0], [0, 1]], np.float32)
    for _ in range(4):
        trainer.train_minibatch({x: xs, y: ys})
    trainer.summarize_training_progress()
    assert [u[1] for u in rec.updates] == [(0, 2), (2, 4)]  # every 2 minibatches
    assert rec.updates[0][0] == (0, 4) and rec.updates[1][0] == (4, 8)
    assert rec.updates[0][3] is not None
    assert len(rec.summaries) == 1 and rec.summaries[0][:3] == (8, 4, 1)
    assert isinstance(rec, C.logging.ProgressWriter) and rec.total_training_updates == 4


def test_a_sequence_longer_than_its_streams_max_sequence_length_names_the_file_and_line(tmp_path):
    path = tmp_path / 'words.ctf'
    path.write_text('0 |w 1:1\n1 |w 2:1\n1 |w 3:1\n1 |w 0:1\n')
    streams = StreamDefs(w=StreamDef(field='w', shape=4, is_sparse=True, max_sequence_length=2))
    source = MinibatchSource(CTFDeserializer(str(path), streams), randomize=False, max_sweeps=1)
    with pytest.raises(OSError, match=r'words\.ctf:2:1: the sequence starting here has 3 samples of input '
                                      r"'w', more than its max_sequence_length of 2"):
        source.next_minibatch(10)
    with pytest.raises(ValueError, match='max_sequence_length must be positive'):
        StreamDef(field='w', shape=4, max_sequence_length=0)


def test_trainer_get_loss_metric_splits_a_criterion_as_cntk_did():
    # CNTK's Sequence2Sequence builds its Evaluator with Trainer._get_loss_metric(criterion).
    x, y = C.input_variable(2), C.input_variable(2)
    loss, metric = C.Trainer._get_loss_metric(C.combine([C.squared_error(x, y), C.classification_error(x, y)]))
    data = {x: np.array([[1, 2]], np.float32), y: np.array([[1, 0]], np.float32)}
    np.testing.assert_allclose(loss.eval(data), [4.0])
    np.testing.assert_allclose(np.ravel(metric.eval(data)), [1.0])  # the label is class 0, the guess 1
    only, none = C.Trainer._get_loss_metric(C.squared_error(x, y))
    assert none is None
    np.testing.assert_allclose(only.eval(data), [4.0])
    with pytest.raises(ValueError, match='a loss, or a loss and a metric'):
        C.Trainer._get_loss_metric((loss, metric, loss))
