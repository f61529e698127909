# pytest setup for the Python API tests: they import `cntk` and `ctk` from the build tree
# (PYTHONPATH=<build>/python, set by the CTest entry python_tests).
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def counted_random_seeds():
    # Every test starts from the same seed source (as CNTK's own conftest did), so that a test that fixes
    # the seed does not change the initial weights of the tests after it.
    import cntk
    cntk.cntk_py.reset_random_seed(0)
    yield
