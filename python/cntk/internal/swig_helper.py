"""cntk.internal.swig_helper: typemap and map_if_possible (pass-throughs in ctk)."""
from ctk.internal import typemap, map_if_possible  # noqa: F401
