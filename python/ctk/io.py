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
                       device=None):
        """The next minibatch_size_in_samples rows (fewer at the end of a sweep, which ends the minibatch;
        nothing once max_samples are delivered), as {StreamInformation: MinibatchData}, or with input_map
        {variable: stream} as {variable: MinibatchData}."""
        from ._ctk import Value
        left = self.max_samples - self._delivered
        if left <= 0:
            return {}
        n = min(minibatch_size_in_samples, self.num_samples - self._position, left)
        begin, end = self._position, self._position + n
        self._position = end % self.num_samples
        self._delivered += n
        sweep_end = self._position == 0
        batch = {}
        for name, data in self._data.items():
            # A reader's MinibatchData holds [sequences, length, sample...]: a row is a sequence of one.
            if isinstance(data, (list, tuple)):
                rows = list(data[begin:end])
                samples = sum(len(s) for s in rows)
            elif hasattr(data, 'indptr'):
                rows = [data[i:i + 1] for i in range(begin, end)]
                samples = n
            else:
                rows = data[begin:end].reshape((n, 1) + data.shape[1:])
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
