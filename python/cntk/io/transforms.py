"""cntk.io.transforms: the image transforms of CNTK's ImageDeserializer (crop, scale, mean, color)."""
from ctk.io_transforms import *  # noqa: F401,F403
from ctk.io_transforms import __all__  # noqa: F401
