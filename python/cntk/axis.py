"""cntk.axis: Axis, the static and dynamic axes of a Variable."""
from ctk._ctk import Axis  # noqa: F401

__all__ = ['Axis']
