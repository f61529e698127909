"""CNTK's MinibatchSourceConfig and to_dictionary (cntk.cntk_py): a minibatch source's settings as one
object, checked and turned into CNTK's configuration dictionary with CNTK's keys, and
create_composite_minibatch_source, which makes the MinibatchSource it describes."""
from ._ctk.io import Deserializer, INFINITELY_REPEAT, DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS
from .logging import TraceLevel

# CNTK read these on several threads unless told otherwise (ctk's MinibatchSource uses reader threads
# for every deserializer; the key only says what CNTK would have done).
_MULTITHREADED_TYPES = ('ImageDeserializer', 'HTKFeatureDeserializer', 'HTKMLFDeserializer')


class _Optional:
    """CNTK's Optional<bool> (config.is_multithreaded.set(True))."""

    def __init__(self):
        self._value = None

    def set(self, value):
        self._value = bool(value)

    def get(self):
        return self._value

    def is_initialized(self):
        return self._value is not None


class MinibatchSourceConfig:
    """CNTK's MinibatchSourceConfig(deserializers=[], randomize=True): the deserializers and the
    source's settings, as the attributes of CNTK's names."""

    def __init__(self, deserializers=None, randomize=True):
        self.deserializers = list(deserializers or [])
        self.max_samples = INFINITELY_REPEAT
        self.max_sweeps = INFINITELY_REPEAT
        self.randomization_window_in_chunks = DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS if randomize else 0
        self.randomization_window_in_samples = 0
        self.randomization_seed = 0
        self.trace_level = TraceLevel.Warning.value
        self.is_multithreaded = _Optional()
        self.is_frame_mode_enabled = False
        self.truncation_length = 0
        self.max_errors = 0

    def add_deserializer(self, deserializer):
        self.deserializers.append(deserializer)
        return self


def _deserializer_dict(d):
    from .io_user import UserDeserializer
    if isinstance(d, dict):
        return d
    if isinstance(d, UserDeserializer):
        return {'type': 'UserDeserializer', 'module': type(d).__module__, 'class': type(d).__name__}
    if isinstance(d, Deserializer):
        config = getattr(d, '_cntk_config', None)
        return config if config is not None else {'type': repr(d)}
    raise TypeError('MinibatchSourceConfig: %r is not a deserializer' % (d,))


def to_dictionary(config):
    """CNTK's configuration dictionary of a MinibatchSourceConfig, after CNTK's checks (ValueError for
    no deserializers, both max_samples and max_sweeps, both window sizes, truncation with frame mode)."""
    c = config
    if not c.deserializers:
        raise ValueError('MinibatchSourceConfig: it holds no deserializers')
    if c.max_samples != INFINITELY_REPEAT and c.max_sweeps != INFINITELY_REPEAT:
        raise ValueError('MinibatchSourceConfig: max_samples (%d) and max_sweeps (%d) cannot both be set'
                         % (c.max_samples, c.max_sweeps))
    d = {}
    if c.randomization_window_in_samples:
        if c.randomization_window_in_chunks:
            raise ValueError('MinibatchSourceConfig: randomization_window_in_chunks (%d) and '
                             'randomization_window_in_samples (%d) cannot both be set'
                             % (c.randomization_window_in_chunks, c.randomization_window_in_samples))
        d.update(randomize=True, randomizationWindow=c.randomization_window_in_samples,
                 sampleBasedRandomizationWindow=True, randomizationSeed=c.randomization_seed)
    elif c.randomization_window_in_chunks:
        d.update(randomize=True, randomizationWindow=c.randomization_window_in_chunks,
                 sampleBasedRandomizationWindow=False, randomizationSeed=c.randomization_seed)
    else:
        d['randomize'] = False
    if c.truncation_length:
        if c.is_frame_mode_enabled:
            raise ValueError('MinibatchSourceConfig: truncation_length (%d) and frame mode cannot both be set'
                             % c.truncation_length)
        d.update(truncated=True, truncationLength=c.truncation_length)
    deserializers = [_deserializer_dict(x) for x in c.deserializers]
    multithreaded = c.is_multithreaded.get()
    if multithreaded is None:
        multithreaded = any(x.get('type') in _MULTITHREADED_TYPES for x in deserializers)
    d.update(frameMode=bool(c.is_frame_mode_enabled), multiThreadedDeserialization=multithreaded,
             traceLevel=int(c.trace_level), deserializers=deserializers)
    if c.max_errors:
        d['maxErrors'] = c.max_errors
    return d


def create_composite_minibatch_source(config):
    """The MinibatchSource a MinibatchSourceConfig describes (checked as to_dictionary checks it)."""
    from .io import MinibatchSource
    to_dictionary(config)
    window_samples = config.randomization_window_in_samples
    return MinibatchSource(config.deserializers, max_samples=config.max_samples, max_sweeps=config.max_sweeps,
                           randomization_window_in_chunks=config.randomization_window_in_chunks or 1,
                           randomization_window_in_samples=window_samples,
                           randomization_seed=config.randomization_seed,
                           multithreaded_deserializer=config.is_multithreaded.get(),
                           frame_mode=config.is_frame_mode_enabled, truncation_length=config.truncation_length,
                           randomize=bool(config.randomization_window_in_chunks or window_samples),
                           max_errors=config.max_errors)


__all__ = ['MinibatchSourceConfig', 'to_dictionary', 'create_composite_minibatch_source']
