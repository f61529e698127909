"""cntk.io: readers. StreamDefs is the dict with attribute access CNTK wrote in Python."""
from ._ctk.io import (MinibatchSource, CTFDeserializer, StreamDef, StreamInformation,  # noqa: F401
                      MinibatchData, Deserializer, INFINITELY_REPEAT, FULL_DATA_SWEEP,
                      DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS)


class StreamDefs(dict):
    """StreamDefs(features=StreamDef(...), labels=StreamDef(...)): stream name -> StreamDef."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


__all__ = ['MinibatchSource', 'CTFDeserializer', 'StreamDef', 'StreamDefs', 'StreamInformation',
           'MinibatchData', 'INFINITELY_REPEAT', 'FULL_DATA_SWEEP', 'DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS']
