"""Readers written in Python, as CNTK's users wrote them: UserMinibatchSource (a whole source: the
training session, cross-validation and test drive it like any MinibatchSource) and UserDeserializer
(chunks of data under the MinibatchSource's randomizer, reader threads and checkpoints)."""
from .variables import Record
from ._ctk.io import MinibatchSource


class UserMinibatchSource(MinibatchSource):
    """CNTK's base class of a minibatch source written in Python. Implement stream_infos() (a list of
    StreamInformation) and next_minibatch(num_samples, number_of_workers, worker_rank, device=None)
    returning {StreamInformation: MinibatchData} ({} when the data is exhausted); implement
    get_checkpoint_state() (a dict of str keys) and restore_from_checkpoint(state) when the source's
    position must survive a checkpoint, and is_infinite() when it never runs dry. Call
    super().__init__() after the streams are known."""

    def __init__(self):
        MinibatchSource.__init__(self)
        self._stream_record = Record(**{si.name: si for si in self.stream_infos()})

    @property
    def streams(self):
        """The streams as CNTK's Record: source.streams.features and source.streams['features']."""
        if getattr(self, '_stream_record', None) is None:
            self._stream_record = Record(**{si.name: si for si in self.stream_infos()})
        return self._stream_record

    @streams.setter
    def streams(self, value):
        self._stream_record = value

    def stream_infos(self):
        raise NotImplementedError('UserMinibatchSource: stream_infos() must return the list of '
                                  'StreamInformation of the source')

    def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
        raise NotImplementedError('UserMinibatchSource: next_minibatch(num_samples, number_of_workers, '
                                  'worker_rank, device) must return {StreamInformation: MinibatchData}')

    def _next_minibatch(self, num_samples, number_of_workers, worker_rank, device):
        # What ctk's training session calls: the user's method with CNTK's positional arguments.
        return self.next_minibatch(num_samples, number_of_workers, worker_rank, device)

    def get_checkpoint_state(self):
        return {}

    def restore_from_checkpoint(self, state):
        if state:
            raise NotImplementedError('UserMinibatchSource: to restore a checkpoint the source must implement '
                                      'restore_from_checkpoint(state)')

    def is_infinite(self):
        return False

    def __getitem__(self, name):
        return self.stream_info(name)


class UserDeserializer:
    """CNTK's base class of a deserializer written in Python, for data in a format ctk does not read.
    Implement stream_infos() (a list of StreamInformation), num_chunks() and get_chunk(chunk_id), which
    returns {stream name: data}: for data of one sample per sequence an array [count, sample...] or a CSR
    matrix of `count` rows; for sequences a list with one array [length, sample...] or CSR matrix of
    `length` rows per sequence. A chunk must hold the same data every time it is asked for (the reader
    asks each chunk once when the MinibatchSource is made, to plan its sweeps, and again when it reads
    it). Pass the instance to MinibatchSource like any deserializer; get_chunk may be called on the
    reader's threads (with the GIL held)."""

    def stream_infos(self):
        raise NotImplementedError('UserDeserializer: stream_infos() must return the list of StreamInformation')

    def num_chunks(self):
        raise NotImplementedError('UserDeserializer: num_chunks() must return the number of chunks')

    def get_chunk(self, chunk_id):
        raise NotImplementedError('UserDeserializer: get_chunk(chunk_id) must return {stream name: data}')


__all__ = ['UserMinibatchSource', 'UserDeserializer']
