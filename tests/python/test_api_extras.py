"""CNTK 2.7 API pieces: cntk.logging.graph, Parameter/Constant classes, the Delay layer, the universal
learner, trace levels and the top-level device functions."""
import numpy as np
import pytest

import cntk as C
from cntk.logging.graph import depth_first_search, find_all_with_name, find_by_name, get_node_outputs, plot


def small_model():
    x = C.input_variable(3, name='x')
    h = C.layers.Dense(4, activation=C.relu, name='hidden')(x)
    z = C.layers.Dense(2, name='out')(h)
    return x, z


def test_graph_search_finds_blocks_and_their_insides():
    x, z = small_model()
    assert find_by_name(z, 'hidden').name == 'hidden'
    assert find_by_name(z, 'x') == x
    assert find_by_name(z, 'no such node') is None
    params = depth_first_search(z, lambda n: isinstance(n, C.Parameter))
    assert params == []  # depth 0: the Dense blocks are single nodes
    params = depth_first_search(z, lambda n: isinstance(n, C.Parameter), depth=-1)
    assert sorted(p.shape for p in params) == [(2,), (3, 4), (4,), (4, 2)]
    assert len(find_all_with_name(z, 'W', depth=-1)) == 2
    with pytest.raises(ValueError, match='multiple'):
        find_by_name(z, 'W', depth=-1)
    outs = get_node_outputs(z)
    assert z.output in outs and find_by_name(z, 'hidden').output in outs
    dot = plot(z)
    assert dot.startswith('digraph') and 'hidden' in dot
    with pytest.raises(NotImplementedError, match='DOT'):
        plot(z, 'graph.png')


def test_parameter_and_constant_classes():
    p = C.Parameter((2, 3), init=C.glorot_uniform(), name='p')
    c = C.Constant(np.ones((2,), np.float32), name='c')
    assert isinstance(p, C.Parameter) and not isinstance(p, C.Constant)
    assert isinstance(c, C.Constant) and isinstance(c, C.Variable)
    assert p.shape == (2, 3) and p.name == 'p' and c.name == 'c'
    assert not isinstance(C.input_variable(2), C.Parameter)
    from cntk.variables import Parameter
    assert Parameter is C.Parameter


def test_delay_layer_shifts_sequences():
    x = C.sequence.input_variable(1)
    seq = [np.array([[1], [2], [3]], np.float32)]
    np.testing.assert_array_equal(C.layers.Delay(1)(x).eval({x: seq})[0].ravel(), [0, 1, 2])
    np.testing.assert_array_equal(C.layers.Delay(-1, initial_state=9)(x).eval({x: seq})[0].ravel(), [2, 3, 9])
    np.testing.assert_array_equal(C.layers.Delay(0)(x).eval({x: seq})[0].ravel(), [1, 2, 3])


def test_universal_learner_matches_sgd():
    def run(make_learner):
        C.cntk_py.set_fixed_random_seed(1)
        x = C.input_variable(2)
        z = C.layers.Dense(1)(x)
        loss = C.squared_error(z, C.input_variable(1, name='y'))
        y = loss.arguments[1] if loss.arguments[0] == x else loss.arguments[0]
        t = C.Trainer(z, (loss, None), [make_learner(z.parameters)])
        for _ in range(3):
            t.train_minibatch({x: np.array([[1, 2], [3, 4]], np.float32), y: np.array([[1], [0]], np.float32)})
        return [p.value for p in z.parameters]

    lr = 0.05

    def sgd_update(params, grads):
        return C.combine([C.assign(p, p - lr * g) for p, g in zip(params, grads)])

    a = run(lambda ps: C.learners.universal(sgd_update, ps))
    b = run(lambda ps: C.sgd(ps, C.learning_parameter_schedule(lr, minibatch_size=1)))
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-6)

    # CNTK's low-level form: the update built over variables standing for the gradients, here constants
    # (as CNTK's own gather test builds it) and inputs.
    def low_level(ps, make_gradient):
        grads = [make_gradient(p) for p in ps]
        return C.cntk_py.universal_learner(ps, grads, sgd_update(ps, grads))

    c = run(lambda ps: low_level(ps, lambda p: C.constant(0, shape=p.shape)))
    d = run(lambda ps: low_level(ps, lambda p: C.input_variable(p.shape, dynamic_axes=[])))
    for u, v, w in zip(b, c, d):
        np.testing.assert_allclose(u, v, rtol=1e-6)
        np.testing.assert_allclose(u, w, rtol=1e-6)
    x = C.parameter((2, 3))
    with pytest.raises(ValueError, match="gradient variable"):
        C.cntk_py.universal_learner([x], [C.constant(0, shape=(3, 2))], C.assign(x, x))


def test_trace_level_and_top_level_devices():
    from cntk.logging import TraceLevel, get_trace_level, set_trace_level
    set_trace_level(TraceLevel.Info)
    assert get_trace_level() == TraceLevel.Info
    set_trace_level(TraceLevel.Warning)
    with pytest.raises(ValueError):
        set_trace_level(7)
    assert C.cpu() == C.device.cpu() and C.use_default_device() == C.cpu()
    assert C.try_set_default_device(C.cpu())
