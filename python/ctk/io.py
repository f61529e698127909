"""cntk.io: readers. StreamDefs is the dict with attribute access CNTK wrote in Python. ImageDeserializer
and Base64ImageDeserializer return CNTK's configuration dictionary (keys may be added, as CNTK's users
did: d['grayscale'] = True); the MinibatchSource builds the reader from it."""
import uuid

from .variables import Record
from .io_user import UserMinibatchSource, UserDeserializer  # noqa: F401
from ._ctk import io as _io
from ._ctk.io import (MinibatchSource, ctf_to_cbf, StreamInformation,  # noqa: F401
                      MinibatchData, Deserializer, INFINITELY_REPEAT, FULL_DATA_SWEEP,
                      DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS)


def CTFDeserializer(filename, streams):
    """CNTK's text-format reader: lines `[sequence id] |name value value ...` (dense) or `|name index:value
    ...` (sparse); `streams` maps stream names to StreamDef(field=the |name, shape, is_sparse)."""
    d = _io.CTFDeserializer(filename, streams)
    d._cntk_config = {'type': 'CNTKTextFormatDeserializer', 'file': filename,
                      'input': {name: {'alias': s.field or name, 'dim': _dim(s.shape),
                                       'format': 'sparse' if s.is_sparse else 'dense',
                                       'definesMBSize': bool(s.defines_mb_size)}
                                for name, s in streams.items()}}
    return d


def CBFDeserializer(filename, streams={}):
    """CNTK's binary-format reader: every stream of the file, or those of `streams` renamed
    ({name: StreamDef(field=the name in the file)})."""
    d = _io.CBFDeserializer(filename, streams or None)
    d._cntk_config = {'type': 'CNTKBinaryFormatDeserializer', 'file': filename,
                      'input': {name: {'alias': s.field or name} for name, s in (streams or {}).items()}}
    return d


def _dim(shape):
    n = 1
    for d in shape or [1]:
        n *= d
    return n


class StreamDefs(Record):
    """StreamDefs(features=StreamDef(...), labels=StreamDef(...)): stream name -> StreamDef."""


def StreamDef(field=None, shape=None, is_sparse=False, transforms=None, context=None, scp=None, mlf=None,
              broadcast=None, defines_mb_size=False, max_sequence_length=65535):
    """CNTK's StreamDef: `field` is the name in the file ('image' or 'label' for the image readers),
    `shape` the sample shape (the number of classes for labels), `transforms` an image stream's
    transforms (cntk.io.transforms)."""
    d = _io.StreamDef(field=field, shape=shape, is_sparse=is_sparse, context=context, scp=scp, mlf=mlf,
                      broadcast=broadcast, defines_mb_size=defines_mb_size,
                      max_sequence_length=max_sequence_length)
    d.transforms = list(transforms) if transforms is not None else []
    return d


class _DeserializerConfig(dict):
    """A deserializer as CNTK's configuration dictionary (what CNTK's ImageDeserializer returned)."""


def _image_deserializer_args(filename, streams, who):
    # CNTK: without a label stream, a hidden one with two classes (so the labels must be 0 or 1).
    image, label, classes, transforms = None, '_ignore_labels_' + str(uuid.uuid1()), 2, []
    for name in streams:
        s = streams[name]
        if s.field == 'image':
            image, transforms = name, list(getattr(s, 'transforms', []) or [])
        elif s.field == 'label':
            label = name
            classes = 1
            for d in s.shape:
                classes *= d
        else:
            raise ValueError("%s: invalid field name '%s', allowed are 'image' and 'label'" % (who, s.field))
    if image is None:
        raise ValueError("%s: stream name ('image' or 'label') must be specified" % who)
    return _DeserializerConfig(type=who, module='ImageReader', file=filename,
                               input={image: {'transforms': transforms + [{'type': 'Transpose'}]},
                                      label: {'labelDim': classes}})


def ImageDeserializer(filename, streams):
    """CNTK's image reader over a map file of lines `path<TAB>label` or `key<TAB>path<TAB>label`; streams
    with field 'image' (its transforms) and 'label' (its shape: the number of classes). Images come as
    float32 [3, H, W] planes in Blue, Green, Red order, values 0..255 (minus the mean), as CNTK's did."""
    return _image_deserializer_args(filename, streams, 'ImageDeserializer')


def Base64ImageDeserializer(filename, streams):
    """CNTK's reader of lines `[key<TAB>]label<TAB>base64 of an image file`; streams as ImageDeserializer."""
    return _image_deserializer_args(filename, streams, 'Base64ImageDeserializer')


def _legacy_crop(crop_type='center', ratio=1.0, jitter_type='uniRatio'):
    """CNTK 2.0's ImageDeserializer.crop(crop_type, ratio, jitter_type): crop_type 'Random' is randomside."""
    from .io_transforms import crop
    kind = crop_type.lower()
    return crop('randomside' if kind == 'random' else kind, side_ratio=ratio, jitter_type=jitter_type.lower())


def _legacy(name):
    def transform(*args, **kwargs):
        from . import io_transforms
        return getattr(io_transforms, name)(*args, **kwargs)
    transform.__name__ = name
    return transform


ImageDeserializer.crop = _legacy_crop
ImageDeserializer.scale = _legacy('scale')
ImageDeserializer.mean = _legacy('mean')


def _ratio(value, key):
    """CNTK's 'a:b' strings (or a number or pair) as (a, b)."""
    if isinstance(value, str):
        parts = [float(p) for p in value.split(':')]
    elif isinstance(value, (tuple, list)):
        parts = [float(p) for p in value]
    else:
        parts = [float(value)]
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2:
        raise ValueError('%s: %r is not a number or a pair of numbers' % (key, value))
    return parts


def _transform_from_config(t, who):
    kind = t.get('type')
    if kind == 'Crop':
        c = _io._ImageCrop()
        c.crop_type = t.get('cropType', 'center')
        c.crop_width, c.crop_height = (int(v) for v in _ratio(t.get('cropSize', 0), 'cropSize'))
        c.side_ratio_min, c.side_ratio_max = _ratio(t.get('sideRatio', 0.0), 'sideRatio')
        c.area_ratio_min, c.area_ratio_max = _ratio(t.get('areaRatio', 0.0), 'areaRatio')
        c.aspect_ratio_min, c.aspect_ratio_max = _ratio(t.get('aspectRatio', 1.0), 'aspectRatio')
        c.jitter_type = t.get('jitterType', 'none')
        if 'hflip' in t:
            c.hflip = bool(t['hflip'])
        c.seed = int(t.get('seed', 0))
        return c
    if kind == 'Scale':
        s = _io._ImageScale()
        s.width, s.height, s.channels = int(t['width']), int(t['height']), int(t['channels'])
        s.interpolations = t.get('interpolations', 'linear')
        s.scale_mode = t.get('scaleMode', 'fill')
        s.pad_value = int(t.get('padValue', -1))
        return s
    if kind == 'Mean':
        m = _io._ImageMean()
        m.mean_file = t['meanFile']
        return m
    if kind == 'Color':
        c = _io._ImageColor()
        c.brightness_radius = float(t.get('brightnessRadius', 0.0))
        c.contrast_radius = float(t.get('contrastRadius', 0.0))
        c.saturation_radius = float(t.get('saturationRadius', 0.0))
        c.seed = int(t.get('seed', 0))
        return c
    raise ValueError("%s: unknown transform type %r (ctk has Crop, Scale, Mean and Color)" % (who, kind))


def _deserializer_from_config(config):
    """The reader for one of CNTK's deserializer dictionaries, or for a UserDeserializer (MinibatchSource
    calls this)."""
    from .io_user import UserDeserializer
    if isinstance(config, UserDeserializer):
        return _io._user_deserializer(config)
    who = config.get('type') if hasattr(config, 'get') else None
    if who not in ('ImageDeserializer', 'Base64ImageDeserializer'):
        raise TypeError('MinibatchSource: %r is neither a deserializer nor an image deserializer configuration'
                        % (config,))
    c = _io._ImageDeserializerConfig()
    c.map_file = config['file']
    c.label_stream, c.num_classes = '', 2
    for name, spec in config['input'].items():
        if 'labelDim' in spec:
            if not name.startswith('_ignore_labels_'):
                c.label_stream = name
            c.num_classes = int(spec['labelDim'])
        else:
            c.image_stream = name
            c.transforms = [_transform_from_config(t, who) for t in spec.get('transforms', [])
                            if t.get('type') not in ('Transpose', 'Cast')]
    c.grayscale = bool(config.get('grayscale', False))
    c.multi_view_crop = bool(config.get('multiViewCrop', False))
    c.max_errors = int(config.get('maxErrors', 0))
    make = _io._image_deserializer if who == 'ImageDeserializer' else _io._base64_image_deserializer
    return make(c)


__all__ = ['sequence_to_cntk_text_format', 'MinibatchSource', 'CTFDeserializer', 'CBFDeserializer', 'ctf_to_cbf', 'ImageDeserializer', 'Base64ImageDeserializer', 'StreamDef',
           'StreamDefs', 'StreamInformation', 'MinibatchData', 'INFINITELY_REPEAT', 'FULL_DATA_SWEEP',
           'DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS']


def _is_tensor(data):
    """CNTK's test of whether `data` (lists nested to any depth, or numbers) is one rectangular tensor of
    numbers: False when NumPy arrays or ragged lists are inside."""
    if not isinstance(data, (list, tuple)):
        return False

    def shape_of(x):
        if isinstance(x, (list, tuple)):
            inner = [shape_of(e) for e in x]
            if any(i is None for i in inner) or len(set(inner)) > 1:
                return None
            return (len(x),) + (inner[0] if inner else ())
        if isinstance(x, (int, float, complex)) or (hasattr(x, 'dtype') and getattr(x, 'ndim', 1) == 0):
            return ()
        return None

    return shape_of(data) is not None


def sequence_to_cntk_text_format(seq_idx, alias_tensor_map):
    """CNTK's text format of one sequence: `alias_tensor_map` maps each input's alias to its data, an
    array [length, sample...] (dense, written as its values) or a CSR matrix [length, dim] (sparse,
    written as index:value). One line per time step, `seq_idx<TAB>|alias values |alias values`, aliases in
    sorted order; a shorter input is left out of the lines past its end. ValueError for data that is
    neither."""
    import numpy as np
    columns = []
    for alias in sorted(alias_tensor_map):
        data = alias_tensor_map[alias]
        if hasattr(data, 'indptr'):
            rows = []
            for r in range(data.shape[0]):
                begin, end = data.indptr[r], data.indptr[r + 1]
                rows.append(' '.join('%d:%s' % (i, _number(v))
                                     for i, v in zip(data.indices[begin:end], data.data[begin:end])))
        else:
            try:
                arr = np.asarray(data, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError('sequence_to_cntk_text_format: the data of %r is neither an array nor a '
                                 'sparse matrix' % alias)
            if arr.size == 0:
                continue
            if arr.ndim == 0:
                arr = arr.reshape(1, 1)
            rows = [' '.join(_number(v) for v in row.reshape(-1)) for row in arr.reshape(arr.shape[0], -1)]
        columns.append((alias, rows))
    length = max((len(rows) for _, rows in columns), default=0)
    lines = []
    for t in range(length):
        parts = ['%s %s' % (alias, rows[t]) for alias, rows in columns if t < len(rows)]
        lines.append('%i\t|' % seq_idx + ' |'.join(parts))
    return '\n'.join(lines)


def _number(v):
    v = float(v)
    return str(int(v)) if v.is_integer() else repr(v)


class MinibatchSourceFromData(UserMinibatchSource):
    """CNTK's MinibatchSourceFromData: minibatches cut in order from data held in memory, a dict
    {stream name: data} where each data is an array [samples, ...] (one sample per row), a list of
    sequences (arrays [length, ...]) or CSR rows. All streams must hold the same number of samples (or
    sequences). Sweeps repeat until max_samples samples are delivered (INFINITELY_REPEAT: forever);
    `streams` holds a StreamInformation per name, as a MinibatchSource's. A UserMinibatchSource, so
    training_session takes it."""

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
        self._infos = [_data_stream(i, name, data) for i, (name, data) in enumerate(self._data.items())]
        UserMinibatchSource.__init__(self)
        self.streams = StreamDefs({si.name: si for si in self._infos})

    def stream_infos(self):
        return list(self._infos)

    def is_infinite(self):
        return self.max_samples == INFINITELY_REPEAT

    def _next_minibatch(self, num_samples, number_of_workers, worker_rank, device):
        return self.next_minibatch(num_samples, number_of_workers, worker_rank, device)

    def next_minibatch(self, minibatch_size_in_samples, number_of_workers=1, worker_rank=0, device=None,
                       input_map=None, num_data_partitions=None, partition_index=None):
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
        return {var: batch[stream if isinstance(stream, StreamInformation) else self.streams[stream]]
                for var, stream in input_map.items()}

    def get_checkpoint_state(self):
        return {'position': self._position, 'delivered': self._delivered}

    def restore_from_checkpoint(self, state):
        self._position, self._delivered = int(state['position']), int(state['delivered'])


def _data_stream(index, name, data):
    """The StreamInformation of one MinibatchSourceFromData stream: its name, sparsity and sample shape."""
    import numpy as np
    first = data[0] if isinstance(data, (list, tuple)) else data
    return StreamInformation(name, index, 'sparse' if hasattr(first, 'indptr') else 'dense', np.float32,
                             tuple(first.shape[1:]))


__all__ += ['MinibatchSourceFromData', 'UserMinibatchSource', 'UserDeserializer']
