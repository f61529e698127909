"""cntk.train: Trainer, training_session and their configurations."""
from . import trainer, training_session, distributed  # noqa: F401  (before the names: training_session is both)
from ctk.train import *  # noqa: F401,F403,E402
from ctk.train import __all__  # noqa: F401,E402
