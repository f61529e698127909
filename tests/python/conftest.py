# pytest setup for the Python API tests: they import `cntk` and `ctk` from the build tree
# (PYTHONPATH=<build>/python, set by the CTest entry python_tests).
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)
