"""Readers written in Python (CNTK's UserDeserializer and UserMinibatchSource), CNTK's MinibatchSourceConfig
and to_dictionary, the source's position as a dict, CNTK's text-format writer, and CNTK's sweep semantics
(a minibatch runs on into the next sweep; a window of 0 chunks is no randomization)."""
import numpy as np
import pytest

import cntk as C
from cntk.io import (MinibatchSource, CTFDeserializer, StreamDef, StreamDefs, StreamInformation, MinibatchData,
                     UserDeserializer, UserMinibatchSource, ImageDeserializer, INFINITELY_REPEAT,
                     sequence_to_cntk_text_format)
import cntk.io.transforms as xforms
from cntk.cntk_py import MinibatchSourceConfig, to_dictionary, create_composite_minibatch_source
from cntk.logging import TraceLevel
from csr_data import Csr as _Csr


class Chunks(UserDeserializer):
    """Chunk c holds `per_chunk` sequences; sequence i of chunk c is numbered 100 c + i. Stream 'x' (dense
    [2, 3]) holds the number everywhere, 'y' (sparse, 4 classes) the one-hot number % 4 (or, with
    one_hot=False, the number in every column). With `lengths`, sequence i has 1 + i % lengths frames."""

    def __init__(self, num_chunks=5, per_chunk=3, lengths=None, one_hot=True):
        self.n, self.per, self.lengths, self.one_hot = num_chunks, per_chunk, lengths, one_hot
        self.calls = 0

    def stream_infos(self):
        return [StreamInformation('x', 0, 'dense', np.float32, (2, 3)),
                StreamInformation('y', 1, 'sparse', np.float32, (4,))]

    def num_chunks(self):
        return self.n

    def _y(self, number, frames):
        if self.one_hot:
            return _Csr(np.eye(4, dtype=np.float32)[[number % 4] * frames])
        return _Csr(np.full((frames, 4), number, np.float32))

    def get_chunk(self, chunk_id):
        self.calls += 1
        numbers = [100 * chunk_id + i for i in range(self.per)]
        if self.lengths is None:  # one sample per sequence: arrays [count, sample...] and one CSR matrix
            x = np.stack([np.full((2, 3), v, np.float32) for v in numbers])
            rows = [np.eye(4)[v % 4] if self.one_hot else np.full(4, v) for v in numbers]
            return {'x': x, 'y': _Csr(np.array(rows, np.float32))}
        frames = [1 + i % self.lengths for i in range(self.per)]
        return {'x': [np.full((f, 2, 3), v, np.float32) for v, f in zip(numbers, frames)],
                'y': [self._y(v, f) for v, f in zip(numbers, frames)]}


def numbers_of(mb, source):
    return [int(s[0][0][0]) for s in mb[source.streams.x].as_sequences()]


def all_numbers(d):
    return sorted(100 * c + i for c in range(d.n) for i in range(d.per))


@pytest.mark.parametrize('randomize', [False, True])
@pytest.mark.parametrize('lengths', [None, 3])
def test_user_deserializer_delivers_every_sequence_once_per_sweep(randomize, lengths):
    d = Chunks(lengths=lengths)
    source = MinibatchSource(d, randomize=randomize, max_sweeps=2, randomization_window_in_chunks=2)
    seen = []
    while True:
        mb = source.next_minibatch(4)
        if not mb:
            break
        seen += numbers_of(mb, source)
        x, y = mb[source.streams.x], mb[source.streams.y]
        assert x.num_sequences == y.num_sequences
        assert y.is_sparse  # one-hot rows stay indices
        for seq_x, seq_y in zip(x.as_sequences(), y.as_sequences()):
            n = int(seq_x[0, 0, 0])
            assert seq_x.shape[1:] == (2, 3) and (seq_x == n).all()
            assert len(seq_x) == (1 if lengths is None else 1 + (n % 100) % lengths)
            dense_y = seq_y.toarray() if hasattr(seq_y, 'toarray') else seq_y
            np.testing.assert_array_equal(dense_y, np.eye(4)[[n % 4] * len(seq_x)])
    assert sorted(seen) == sorted(all_numbers(d) * 2)
    if randomize:
        assert seen[:15] != all_numbers(d)
    else:
        assert seen[:15] == all_numbers(d)


def test_user_deserializer_checkpoint_restores_the_same_minibatches():
    d = Chunks(num_chunks=7, per_chunk=4, lengths=2)
    source = MinibatchSource(d, randomization_window_in_chunks=3, randomization_seed=5)
    for _ in range(5):
        source.next_minibatch(6)
    state = source.get_checkpoint_state()
    assert state['samples_delivered'] == source.total_samples_delivered
    expected = [numbers_of(source.next_minibatch(6), source) for _ in range(8)]
    again = MinibatchSource(d, randomization_window_in_chunks=3, randomization_seed=5)
    again.current_position = state
    assert [numbers_of(again.next_minibatch(6), again) for _ in range(8)] == expected


def test_user_deserializer_sparse_rows_that_are_not_one_hot_come_dense():
    d = Chunks(num_chunks=2, per_chunk=2, one_hot=False)
    source = MinibatchSource(d, randomize=False)
    y = source.next_minibatch(4)[source.streams.y]
    assert not y.is_sparse
    np.testing.assert_array_equal(y.asarray()[:, 0, :], [[0] * 4, [1] * 4, [100] * 4, [101] * 4])


class Broken(Chunks):
    def __init__(self, fault, **kw):
        super().__init__(num_chunks=2, **kw)
        self.fault = fault

    def get_chunk(self, chunk_id):
        data = super().get_chunk(chunk_id)
        if chunk_id == 1 or self.fault == 'second read':
            if self.fault == 'not a dict':
                return [data['x']]
            if self.fault == 'missing stream':
                del data['y']
            if self.fault == 'counts differ':
                data['x'] = data['x'][:2]
            if self.fault == 'sample shape':
                data['x'] = np.zeros((3, 5), np.float32)
            if self.fault == 'column':
                data['y'].indices[0] = 9
            if self.fault == 'raises' and self.calls > 2:
                raise RuntimeError('disk on fire')
            if self.fault == 'second read' and self.calls > 2:
                data['x'], data['y'] = data['x'][:1], _Csr(np.eye(4, dtype=np.float32)[:1])
        return data


@pytest.mark.parametrize('fault, error, text', [
    ('not a dict', TypeError, 'Broken.get_chunk(1) returned a list'),
    ('missing stream', ValueError, "get_chunk(1) returned no data for stream 'y'"),
    ('counts differ', ValueError, "returned 3 sequences for stream 'y' and 2 for stream 'x'"),
    ('sample shape', ValueError, "an array of shape [3, 5] for stream 'x' of sample shape [2, 3]"),
    ('column', IndexError, 'column index 9'),
])
def test_user_deserializer_errors_name_the_class_the_chunk_and_the_stream(fault, error, text):
    with pytest.raises(error) as e:
        MinibatchSource(Broken(fault), randomize=False)
    assert text in str(e.value)


@pytest.mark.parametrize('threads', [False, True])
def test_user_deserializer_exception_on_a_reader_thread_reaches_the_caller(threads):
    source = MinibatchSource(Broken('raises'), randomize=False, multithreaded_deserializer=threads)
    with pytest.raises(RuntimeError, match='disk on fire'):
        source.next_minibatch(4)


def test_user_deserializer_that_changes_a_chunk_is_an_error():
    source = MinibatchSource(Broken('second read'), randomize=False, multithreaded_deserializer=False)
    with pytest.raises(ValueError, match='the same data for a chunk every time'):
        source.next_minibatch(4)
    with pytest.raises(NotImplementedError, match='stream_infos'):
        MinibatchSource(UserDeserializer())


class Counter(UserMinibatchSource):
    """CNTK's UserMinibatchSource pattern: numbers 0, 1, 2, ... with one-hot labels of their parity,
    sweeps of 10; the position survives checkpoints."""

    def __init__(self):
        self.fsi = StreamInformation('features', 0, 'dense', np.float32, (1,))
        self.lsi = StreamInformation('labels', 1, 'dense', np.float32, (2,))
        self.position, self.restored = 0, []
        super().__init__()

    def stream_infos(self):
        return [self.fsi, self.lsi]

    def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
        n = min(num_samples, 10 - self.position % 10)
        values = np.arange(self.position, self.position + n, dtype=np.float32) % 10
        self.position += n
        end = self.position % 10 == 0
        labels = np.eye(2, dtype=np.float32)[values.astype(int) % 2]
        # CNTK's MinibatchData holds [sequences, length, sample...]: here sequences of one sample.
        return {self.fsi: MinibatchData(C.Value(batch=values.reshape(n, 1, 1)), n, n, end),
                self.lsi: MinibatchData(C.Value(batch=labels.reshape(n, 1, 2)), n, n, end)}

    def get_checkpoint_state(self):
        return {'position': np.int64(self.position), 'nested': {'list': [1, np.float32(2.5), 'three', True]}}

    def restore_from_checkpoint(self, state):
        self.restored.append(state)
        self.position = state['position']


def test_user_minibatch_source_drives_a_training_session_with_cross_validation(tmp_path):
    source, cv = Counter(), Counter()
    assert source['features'] is not None and source.streams.labels.name == 'labels'
    x, y = C.input_variable(1), C.input_variable(2)
    z = C.layers.Dense(2)(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    C.train.training_session(trainer=trainer, mb_source=source, mb_size=4,
                             model_inputs_to_streams={x: source.streams.features, y: source.streams.labels},
                             max_samples=25,
                             checkpoint_config=C.train.CheckpointConfig(str(tmp_path / 'ck'), frequency=10),
                             cv_config=C.train.CrossValidationConfig(cv, minibatch_size=3, max_samples=6)).train()
    assert trainer.total_number_of_samples_seen == 25
    # Without a frequency the cross-validation runs once, at the end, and puts the source back.
    assert cv.restored == [{'position': 0, 'nested': {'list': [1, 2.5, 'three', True]}}]
    assert cv.position == 0
    # The checkpoint keeps the training source's own state; a restored session resumes from it.
    again = Counter()
    trainer2 = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                         [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    C.train.training_session(trainer=trainer2, mb_source=again, mb_size=4,
                             model_inputs_to_streams={x: again.streams.features, y: again.streams.labels},
                             max_samples=30,
                             checkpoint_config=C.train.CheckpointConfig(str(tmp_path / 'ck'), frequency=10)).train()
    assert again.restored and again.restored[0]['position'] == 25
    assert trainer2.total_number_of_samples_seen == 30


def test_user_minibatch_source_returning_something_else_says_so():
    class Wrong(Counter):
        def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
            return [1, 2]

    source = Wrong()
    x = C.input_variable(1)
    z = C.layers.Dense(1)(x)
    trainer = C.Trainer(z, (C.reduce_sum(z),), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    with pytest.raises(TypeError, match='Wrong.next_minibatch returned a list'):
        C.train.training_session(trainer=trainer, mb_source=source, mb_size=4,
                                 model_inputs_to_streams={x: source.streams.features}, max_samples=4).train()


def test_user_minibatch_source_without_next_minibatch_says_so():
    class Empty(UserMinibatchSource):
        def stream_infos(self):
            return [StreamInformation('f', 0, 'dense', np.float32, (1,))]

    x = C.input_variable(1)
    z = C.layers.Dense(1)(x)
    trainer = C.Trainer(z, (C.reduce_sum(z),), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    source = Empty()
    with pytest.raises(NotImplementedError, match='next_minibatch'):
        C.train.training_session(trainer=trainer, mb_source=source, mb_size=4,
                                 model_inputs_to_streams={x: source.streams.f}, max_samples=4).train()
    with pytest.raises(ValueError, match="storage_format is 'csc'"):
        StreamInformation('f', 0, 'csc', np.float32, (1,))


def test_minibatch_source_from_data_is_a_user_source_for_training_sessions():
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    Y = np.eye(2, dtype=np.float32)[[0, 1, 0, 1, 0, 1]]
    source = C.io.MinibatchSourceFromData(dict(x=X, y=Y))
    assert isinstance(source, UserMinibatchSource)
    assert source.streams.x.sample_shape == (2,)
    x, y = C.input_variable(2), C.input_variable(2)
    z = C.layers.Dense(2)(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),), [C.sgd(z.parameters, 0.1)])
    C.train.training_session(trainer=trainer, mb_source=source, mb_size=4,
                             model_inputs_to_streams={x: source.streams.x, y: source.streams.y},
                             max_samples=12).train()
    assert trainer.total_number_of_samples_seen == 12


def ctf(tmp_path, n=4):
    path = tmp_path / 'data.ctf'
    path.write_text(''.join('|S0 %d\n' % (i + 1) for i in range(n)))
    return CTFDeserializer(str(path), StreamDefs(features=StreamDef(field='S0', shape=1)))


def test_minibatches_run_on_into_the_next_sweep_as_cntks(tmp_path):
    source = MinibatchSource(ctf(tmp_path), randomize=False, max_sweeps=3)
    got = [source.next_minibatch(5) for _ in range(4)]
    assert [mb[source.streams.features].num_samples for mb in got[:3]] == [5, 5, 2]
    assert all(mb[source.streams.features].end_of_sweep for mb in got[:3])
    assert got[0][source.streams.features].asarray().ravel().tolist() == [1, 2, 3, 4, 1]
    assert got[3] == {}
    # A window of 0 chunks is no randomization (CNTK).
    source = MinibatchSource(ctf(tmp_path), randomization_window_in_chunks=0)
    assert source.next_minibatch(4)[source.streams.features].asarray().ravel().tolist() == [1, 2, 3, 4]


def test_minibatch_source_config_and_to_dictionary(tmp_path):
    c = MinibatchSourceConfig([ctf(tmp_path)], False)
    d = to_dictionary(c)
    assert set(d) == {'randomize', 'frameMode', 'multiThreadedDeserialization', 'traceLevel', 'deserializers'}
    assert d['randomize'] is False and d['traceLevel'] == TraceLevel.Warning
    assert d['deserializers'][0]['type'] == 'CNTKTextFormatDeserializer'
    assert d['deserializers'][0]['input']['features'] == {'alias': 'S0', 'dim': 1, 'format': 'dense',
                                                         'definesMBSize': False}
    c = MinibatchSourceConfig([ctf(tmp_path)])
    c.randomization_window_in_samples = 100
    with pytest.raises(ValueError, match='cannot both be set'):
        to_dictionary(c)
    c.randomization_window_in_chunks = 0
    assert to_dictionary(c)['sampleBasedRandomizationWindow'] is True
    c.truncation_length, c.is_frame_mode_enabled = 5, True
    with pytest.raises(ValueError, match='frame mode'):
        to_dictionary(c)
    image = ImageDeserializer('map.txt', StreamDefs(f=StreamDef(field='image', transforms=[
        xforms.scale(width=4, height=4, channels=3)]), l=StreamDef(field='label', shape=3)))
    d = to_dictionary(MinibatchSourceConfig([image]))
    assert d['multiThreadedDeserialization'] is True and d['deserializers'][0]['type'] == 'ImageDeserializer'
    # The source the config describes.
    c = MinibatchSourceConfig([ctf(tmp_path)], False)
    c.max_sweeps = 1
    source = create_composite_minibatch_source(c)
    assert source.next_minibatch(10)[source.streams.features].num_samples == 4
    assert source.next_minibatch(10) == {}


def test_image_reader_with_a_scale_reads_no_image_until_asked(tmp_path):
    (tmp_path / 'map.txt').write_text('missing.png\t0\n')
    source = MinibatchSource(ImageDeserializer(str(tmp_path / 'map.txt'), StreamDefs(
        f=StreamDef(field='image', transforms=[xforms.scale(width=4, height=5, channels=3)]),
        l=StreamDef(field='label', shape=2))))
    assert source.streams.f.sample_shape == (3, 5, 4)
    with pytest.raises(OSError, match="line 1 of map file"):
        source.next_minibatch(1)


@pytest.mark.parametrize('data, expected', [
    ({'W': np.array([])}, ''),
    ({'W': np.array([[[1, 0], [0.5, 0]]]), 'L': np.array([[[2]]])}, '3\t|L 2 |W 1 0 0.5 0'),
    ({'W': np.array([[1, 0], [5, 6]]), 'L': np.array([[7]])}, '3\t|L 7 |W 1 0\n3\t|W 5 6'),
    ({'S': _Csr([[0, 2, 0], [1, 0, 0]])}, '3\t|S 1:2\n3\t|S 0:1'),
])
def test_sequence_to_cntk_text_format(data, expected):
    assert sequence_to_cntk_text_format(3, data) == expected


def test_sequence_to_cntk_text_format_rejects_what_is_not_data():
    from cntk.io import _is_tensor
    with pytest.raises(ValueError, match="'A'"):
        sequence_to_cntk_text_format(0, {'A': [object()]})
    assert _is_tensor([[1, 2]]) and not _is_tensor([np.array([1, 2])]) and not _is_tensor([[1], [1, 2]])
    assert INFINITELY_REPEAT > 0
