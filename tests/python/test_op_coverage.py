# Every graph primitive of ctk is reachable from the cntk package the way CNTK's users reach it: by its
# own name in cntk.ops (sequence_<x> as cntk.sequence.<x>), or by the CNTK name listed below. A new graph
# op without a Python binding fails here, naming it.
import importlib

import pytest

import cntk
from ctk import _ctk

# ctk's op name -> where CNTK's Python API builds it, when that is not cntk.ops.<name>.
PYTHON_NAME = {
    "transpose_times": "cntk.ops.times_transpose",
    "reduce": "cntk.ops.reduce_sum",  # and reduce_mean, reduce_max, ... (one op, a reduction attribute)
    "random_distribution": "cntk.random.uniform",  # and normal, bernoulli, gumbel, *_like
    "crop": "cntk.ops.crop_manual",  # and crop_automatic
    "constant_like": "cntk.ops.ones_like",  # and zeros_like
    "straight_through": "cntk.ops.straight_through_impl",
    "past_value": "cntk.sequence.past_value",
    "future_value": "cntk.sequence.future_value",
    "block": "cntk.ops.as_block",
}
# Ops no Python call builds, and why.
NOT_IN_PYTHON = {
    "pass": "CNTK's Pass: read from model files; CNTK's Python had no builder for it",
}


def resolve(path):
    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr, None)


def default_path(name):
    if name.startswith("sequence_"):
        return "cntk.sequence." + name[len("sequence_"):]
    return "cntk.ops." + name


OPS = _ctk.primitive_op_names()


@pytest.mark.parametrize("name", OPS)
def test_every_graph_op_has_a_python_builder(name):
    if name in NOT_IN_PYTHON:
        assert resolve(default_path(name)) is None, f"{name} is listed as not in Python but has a builder"
        return
    path = PYTHON_NAME.get(name, default_path(name))
    assert callable(resolve(path)), f"graph op {name} has no Python builder ({path})"


def test_the_tables_name_real_ops():
    assert len(OPS) > 100 and "times" in OPS
    for name in list(PYTHON_NAME) + list(NOT_IN_PYTHON):
        assert name in OPS, f"{name} is not a graph op"
