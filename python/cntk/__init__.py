"""cntk: CNTK 2.7's module paths over ctk, so that `import cntk as C` and `from cntk.layers import *`
run CNTK scripts unchanged. Each cntk.<name> is the module ctk.<name> itself."""
import sys

import ctk
from ctk import *  # noqa: F401,F403
from ctk import (ops, layers, learners, losses, metrics, initializer, io, train, logging,  # noqa: F401
                 cntk_py, device, sequence, random, debugging, core, variables, __version__)

for _name in ('ops', 'ops.sequence', 'ops.functions', 'layers', 'learners', 'losses', 'metrics', 'initializer',
              'io', 'train', 'logging', 'cntk_py', 'device', 'train.training_session', 'random', 'debugging',
              'core', 'variables'):
    sys.modules['cntk.' + _name] = sys.modules['ctk.' + _name]
sys.modules['cntk.sequence'] = sys.modules['ctk.ops.sequence']
sys.modules['cntk.logging.graph'] = sys.modules['ctk.logging']  # CNTK: from cntk.logging.graph import ...
sys.modules['cntk.debugging.profiler'] = sys.modules['ctk.debugging']  # CNTK: cntk.debugging.profiler
del _name
