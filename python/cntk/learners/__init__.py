"""cntk.learners: schedules and learners."""
from ctk.learners import *  # noqa: F401,F403
from ctk.learners import __all__  # noqa: F401
