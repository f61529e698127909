"""cntk.io: readers. StreamDefs is the dict with attribute access CNTK wrote in Python."""
from .variables import Record
from ._ctk.io import (MinibatchSource, CTFDeserializer, StreamDef, StreamInformation,  # noqa: F401
                      MinibatchData, Deserializer, INFINITELY_REPEAT, FULL_DATA_SWEEP,
                      DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS)


class StreamDefs(Record):
    """StreamDefs(features=StreamDef(...), labels=StreamDef(...)): stream name -> StreamDef."""


__all__ = ['MinibatchSource', 'CTFDeserializer', 'StreamDef', 'StreamDefs', 'StreamInformation',
           'MinibatchData', 'INFINITELY_REPEAT', 'FULL_DATA_SWEEP', 'DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS']


class MinibatchSourceFromData:
    """CNTK's MinibatchSourceFromData: minibatches cut in order from data held in memory, a dict
    {stream name: data} where each data is an array [samples, ...] (one sample per row), a list of
    sequences (arrays [length, ...]) or CSR rows. All streams must hold the same number of samples (or
    sequences). Sweeps repeat until max_samples samples are delivered (INFINITELY_REPEAT: forever);
    `streams` holds a StreamInformation-like record per name, as a MinibatchSource's."""

    def __init__(self, data_streams, max_samples=INFINITELY_REPEAT):
        if not isinstance(data_streams, dict) or not data_streams:
            raise ValueError('MinibatchSourceFromData: data_streams must be a non-empty dict {name: data}')
        import numpy as np
        self._data = {}
        counts = set()
        for name, data in data_streams.items():
            if hasattr(data, 'indptr'):
                n = data.shape[0]
            elif isinstance(data, (list, tuple)):
                n = len(data)
            else:
                data = np.asarray(data)
                n = data.shape[0]
            self._data[name] = data
            counts.add(n)
        if len(counts) != 1:
            raise ValueError('MinibatchSourceFromData: the streams hold different numbers of samples: %s'
                             % {k: (v.shape[0] if hasattr(v, 'shape') else len(v)) for k, v in self._data.items()})
        self.num_samples = counts.pop()
        if self.num_samples == 0:
            raise ValueError('MinibatchSourceFromData: the data is empty')
        self.max_samples = max_samples
        self._position, self._delivered = 0, 0
        self.streams = StreamDefs({name: _DataStream(name, data) for name, data in self._data.items()})

    def stream_info(self, name):
        return self.streams[name]

    def next_minibatch(self, minibatch_size_in_samples, input_map=None, number_of_workers=1, worker_rank=0,
                       device=None, num_data_partitions=None, partition_index=None):
        """The next minibatch_size_in_samples rows (fewer at the end of a sweep, which ends the minibatch;
        nothing once max_samples are delivered), as {StreamInformation: MinibatchData}, or with input_map
        {variable: stream} as {variable: MinibatchData}. With several partitions (num_data_partitions and
        partition_index, or CNTK's number_of_workers and worker_rank) the minibatch is cut as for one
        worker (at least one row per partition while the sweep has them) and each worker gets the rows
        whose index modulo the count is its own, as the MinibatchSource does; a worker left without rows
        at a sweep's end gets {} while the others train."""
        workers = num_data_partitions if num_data_partitions is not None else number_of_workers
        rank = partition_index if partition_index is not None else worker_rank
        if not 0 <= rank < workers:
            raise ValueError('next_minibatch: partition_index %d is not in [0, num_data_partitions=%d)'
                             % (rank, workers))
        left = self.max_samples - self._delivered
        if left <= 0:
            return {}
        in_sweep = self.num_samples - self._position
        n = min(max(minibatch_size_in_samples, min(workers, in_sweep)), in_sweep, left)
        begin, end = self._position, self._position + n
        self._position = end % self.num_samples
        self._delivered += n
        sweep_end = self._position == 0
        if workers > 1:
            mine = [i for i in range(begin, end) if i % workers == rank]
            if not mine:
                return {}
            return self._cut(mine, sweep_end, input_map, device)
        return self._cut(range(begin, end), sweep_end, input_map, device)

    def _cut(self, indices, sweep_end, input_map, device):
        from ._ctk import Value
        indices = list(indices)
        begin, end, n = indices[0], indices[-1] + 1, len(indices)
        step = indices[1] - indices[0] if n > 1 else 1
        batch = {}
        for name, data in self._data.items():
            # A reader's MinibatchData holds [sequences, length, sample...]: a row is a sequence of one.
            if isinstance(data, (list, tuple)):
                rows = list(data[begin:end:step])
                samples = sum(len(s) for s in rows)
            elif hasattr(data, 'indptr'):
                rows = [data[i:i + 1] for i in indices]
                samples = n
            else:
                rows = data[begin:end:step].reshape((n, 1) + data.shape[1:])
                samples = n
            batch[self.streams[name]] = MinibatchData(Value(batch=rows, device=device), n, samples, sweep_end)
        if input_map is None:
            return batch
        return {var: batch[stream if isinstance(stream, _DataStream) else self.streams[stream]]
                for var, stream in input_map.items()}

    def get_checkpoint_state(self):
        return {'position': self._position, 'delivered': self._delivered}

    def restore_from_checkpoint(self, state):
        self._position, self._delivered = int(state['position']), int(state['delivered'])


class _DataStream:
    """A MinibatchSourceFromData stream: its name, shape and sparsity."""

    def __init__(self, name, data):
        self.name = name
        self.is_sparse = hasattr(data, 'indptr')
        first = data[0] if isinstance(data, (list, tuple)) else data
        self.sample_shape = tuple(first.shape[1:])

    def __repr__(self):
        return 'StreamInformation(%r)' % self.name


__all__.append('MinibatchSourceFromData')
