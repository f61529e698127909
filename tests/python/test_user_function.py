"""CNTK's UserFunction: NumPy forward/backward in a graph, trained through, with CNTK's calling
conventions (one input/output vs several), and its errors."""
import numpy as np
import pytest

import cntk as C
from cntk.ops.functions import UserFunction


class MySigmoid(UserFunction):
    def __init__(self, arg, name='MySigmoid'):
        super(MySigmoid, self).__init__([arg], name=name)

    def forward(self, argument, device=None, outputs_to_retain=None):
        sigmoid_x = 1 / (1 + np.exp(-argument))
        return sigmoid_x, sigmoid_x

    def backward(self, state, root_gradients):
        sigmoid_x = state
        return root_gradients * sigmoid_x * (1 - sigmoid_x)

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]


class ScaleAndSum(UserFunction):
    """Two inputs, two outputs: (x * w, x + w)."""

    def __init__(self, x, w):
        super(ScaleAndSum, self).__init__([x, w], name='scale_and_sum')

    def forward(self, arguments, outputs, device=None, outputs_to_retain=None):
        x, w = arguments
        outputs[self.outputs[0]] = x * w
        outputs[self.outputs[1]] = x + w
        return (x, w)

    def backward(self, state, root_gradients, variables):
        x, w = state
        g_prod, g_sum = root_gradients[self.outputs[0]], root_gradients[self.outputs[1]]
        if self.inputs[0] in variables:
            variables[self.inputs[0]] = g_prod * w + g_sum
        if self.inputs[1] in variables:
            variables[self.inputs[1]] = (g_prod * x + g_sum).sum(axis=0)

    def infer_outputs(self):
        x = self.inputs[0]
        return [C.output_variable(x.shape, x.dtype, x.dynamic_axes) for _ in range(2)]


def test_sigmoid_matches_the_builtin_forward_and_backward():
    x = C.input_variable(3, needs_gradient=True)
    f = C.user_function(MySigmoid(x))
    assert f.op_name == 'MySigmoid' and f.name == 'MySigmoid' and f.output.shape == (3,)
    data = np.array([[-1.0, 0.0, 2.0], [0.5, -3.0, 1.0]], np.float32)
    np.testing.assert_allclose(f.eval({x: data}), C.sigmoid(x).eval({x: data}), rtol=1e-6)
    g = f.grad({x: data}, wrt=[x])
    s = 1 / (1 + np.exp(-data))
    np.testing.assert_allclose(g, s * (1 - s), rtol=1e-5)
    # Composes like any op, and clones share the callbacks.
    z = C.plus(f, 1.0)
    np.testing.assert_allclose(z.eval({x: data}), s + 1, rtol=1e-6)
    np.testing.assert_allclose(z.clone(C.CloneMethod.share).eval({z.arguments[0]: data}), s + 1, rtol=1e-6)


def test_two_inputs_two_outputs_and_training_through_it():
    x = C.input_variable(2, needs_gradient=True)  # two inputs can take gradients: the dict form
    w = C.parameter((2,), init=np.array([1.0, 2.0], np.float32))
    f = C.user_function(ScaleAndSum(x, w))
    prod, total = f.outputs
    data = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    r = f.eval({x: data})
    np.testing.assert_allclose(r[prod], data * [1, 2])
    np.testing.assert_allclose(r[total], data + [1, 2])
    # d/dw sum(prod + total) = sum_rows(x + 1)
    g = C.plus(C.reduce_sum(prod), C.reduce_sum(total)).grad({x: data}, wrt=[w])
    np.testing.assert_allclose(g, (data + 1).sum(axis=0))
    # SGD through the user function moves w exactly as the built-in ops do.
    y = C.input_variable(2)
    loss = C.squared_error(prod, y)
    t = C.Trainer(prod, (loss, None), [C.sgd([w], C.learning_parameter_schedule(0.1))])
    t.train_minibatch({x: data, y: np.zeros((2, 2), np.float32)})
    want = np.array([1.0, 2.0]) - 0.1 / 2 * (2 * data * data * [1, 2]).sum(axis=0)
    np.testing.assert_allclose(w.value, want, rtol=1e-5)


def test_without_backward_no_gradient_flows_and_errors_are_clear():
    class NoGrad(MySigmoid):
        backward = UserFunction.backward

    x = C.input_variable(3, needs_gradient=True)
    f = C.user_function(NoGrad(x))
    np.testing.assert_allclose(f.grad({x: np.zeros((1, 3), np.float32)}, wrt=[x]), np.zeros((1, 3)))

    class WrongGrad(MySigmoid):
        def backward(self, state, root_gradients):
            return np.zeros((7,), np.float32)

    f = C.user_function(WrongGrad(x))
    with pytest.raises(ValueError, match='gradient of input 0 has shape'):
        f.grad({x: np.zeros((1, 3), np.float32)}, wrt=[x])

    class Failing(MySigmoid):
        def forward(self, argument, device=None, outputs_to_retain=None):
            raise KeyError('from the user')

    with pytest.raises(KeyError, match='from the user'):
        C.user_function(Failing(x)).eval({x: np.zeros((1, 3), np.float32)})
    assert C.user_function(C.sigmoid(x)).is_composite  # a Function: its composite, as CNTK's
    with pytest.raises(TypeError, match='UserFunction instance'):
        C.user_function(3.0)


def test_as_numpy_false_gets_values():
    class Double(UserFunction):
        def __init__(self, arg):
            super(Double, self).__init__([arg], as_numpy=False)

        def forward(self, argument, device=None, outputs_to_retain=None):
            assert isinstance(argument, C.Value)
            return None, argument.asarray() * 2

        def infer_outputs(self):
            return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    x = C.input_variable(2)
    np.testing.assert_allclose(C.user_function(Double(x)).eval({x: np.ones((1, 2), np.float32)}), [[2, 2]])


class Offset(UserFunction):
    """x + offset, with the offset and a call count as the state a model file keeps."""

    def __init__(self, arg, offset=1.0, name='offset'):
        super(Offset, self).__init__([arg], name=name)
        self.offset, self.calls = offset, 0

    def forward(self, argument, device=None, outputs_to_retain=None):
        self.calls += 1
        return None, argument + self.offset

    def backward(self, state, root_gradients):
        return root_gradients

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def serialize(self):
        return {'offset': self.offset, 'calls': self.calls, 'table': np.arange(3, dtype=np.float32)}

    @staticmethod
    def deserialize(inputs, name, state):
        f = Offset(inputs[0], state['offset'], name)
        f.calls = state['calls']
        np.testing.assert_array_equal(state['table'], [0, 1, 2])
        return f


class NoDeserialize(MySigmoid):
    pass


def test_saved_with_its_state_and_loaded_by_its_class(tmp_path):
    x = C.input_variable(3, name='x')
    w = C.parameter((3, 2), init=np.arange(6, dtype=np.float32).reshape(3, 2))
    u = Offset(x, 2.5, name='shift')
    z = C.times(C.user_function(u), w)
    data = np.array([[1, 2, 3]], np.float32)
    expected = z.eval({x: data})
    path = str(tmp_path / 'deeper' / 'udf.model')  # folders made, as CNTK's save
    z.save(path)
    for source in (path, open(path, 'rb').read()):
        loaded = C.Function.load(source)
        shift = loaded.find_by_name('shift')
        saved = shift.serialize()
        # CNTK's layout of a Python user function's entry, so CNTK's files and ctk's read alike.
        assert (saved['class'], saved['module'], saved['op_name']) == ('Offset', __name__, 'Offset')
        assert saved['state']['offset'] == 2.5 and saved['state']['calls'] == 1
        np.testing.assert_allclose(loaded.eval({loaded.arguments[0]: data}), expected)
    np.testing.assert_allclose(C.load_model(path).eval({'x': data}), expected)


def test_loading_a_user_function_by_factory_and_its_errors(tmp_path):
    x = C.input_variable(3, name='x')
    path = str(tmp_path / 'sigmoid.model')
    C.user_function(NoDeserialize(x, name='sig')).save(path)
    with pytest.raises(ValueError, match='no static deserialize method'):
        C.Function.load(path)
    calls = []

    def factory(inputs, name, state):
        calls.append((name, state))
        return MySigmoid(inputs[0], name=name)

    loaded = C.Function.load(path, udf_factory_callback_map={'NoDeserialize': factory})
    assert calls == [('sig', {})]
    data = np.array([[0, 1, -1]], np.float32)
    np.testing.assert_allclose(loaded.eval({loaded.arguments[0]: data}), 1 / (1 + np.exp(-data)), rtol=1e-6)

    class Local(MySigmoid):  # a class its module does not hold: it cannot be imported back
        pass

    C.user_function(Local(x, name='local')).save(path)
    with pytest.raises(ValueError, match='cannot be imported'):
        C.Function.load(path)

    class BadState(MySigmoid):
        def serialize(self):
            return {'f': lambda: 0}

    with pytest.raises(TypeError, match="'f'"):
        C.user_function(BadState(x)).save(path)


def test_a_trainer_checkpoint_of_a_model_with_a_user_function(tmp_path):
    x = C.input_variable(2, name='x')
    y = C.input_variable(1, name='y')
    w = C.parameter((2, 1), init=0.5)
    z = C.times(C.user_function(Offset(x, 1.0)), w)
    loss = C.squared_error(z, y)
    trainer = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    batch = {x: np.array([[1, 2]], np.float32), y: np.array([[1]], np.float32)}
    trainer.train_minibatch(batch)
    path = str(tmp_path / 'ckp')
    trainer.save_checkpoint(path)
    saved = w.value.copy()
    trainer.train_minibatch(batch)
    assert not np.allclose(w.value, saved)
    trainer.restore_from_checkpoint(path)
    np.testing.assert_array_equal(w.value, saved)


class Plus2(UserFunction):
    """a + b with CNTK's backward convention for a function of several inputs (a dict to fill)."""

    def __init__(self, a, b, name='plus2'):
        super(Plus2, self).__init__([a, b], name=name)

    def forward(self, arguments, device=None, outputs_to_retain=None):
        return None, arguments[0] + arguments[1]

    def backward(self, state, root_gradients, variables):
        for v in variables:
            variables[v] = root_gradients

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def serialize(self):
        return None  # a state of None is kept as None

    @staticmethod
    def deserialize(inputs, name, state):
        assert state is None
        return Plus2(inputs[0], inputs[1], name)


def test_inputs_follow_the_graph_and_several_inputs_fill_a_dict():
    # Made on a placeholder, bound later: infer_outputs and backward see the input the op has now.
    ph = C.placeholder()
    x = C.sequence.input_variable(3, needs_gradient=True, name='x')
    f = C.user_function(Plus2(ph, C.constant(2.0)))
    f.replace_placeholders({ph: x})
    assert f.output.shape == (3,) and len(f.output.dynamic_axes) == 2
    data = [np.array([[1, 2, 3], [4, 5, 6]], np.float32)]
    g, r = f.grad({x: data}, wrt=[x], outputs=[f.output])
    np.testing.assert_allclose(r[0], data[0] + 2)
    np.testing.assert_allclose(g[0], np.ones((2, 3)))  # two inputs, one differentiable: still the dict form
    # One sample for a sequence input (of a free dim): a sequence of one frame, as CNTK took it.
    y = C.sequence.input_variable(C.FreeDimension, needs_gradient=True, name='y')
    h = C.user_function(Plus2(y, C.constant(3.0)))
    g, r = h.grad({y: np.array([1, 2, 3, 4], np.float32)}, wrt=[y], outputs=[h.output])
    np.testing.assert_allclose(r[0], [[4, 5, 6, 7]])
    np.testing.assert_allclose(g[0], [[1, 1, 1, 1]])


def test_user_function_instances_as_inputs_and_registered_deserializers(tmp_path):
    x = C.input_variable(2, name='x')
    inner = Plus2(x, C.constant(1.0), name='inner')
    outer = C.user_function(Plus2(inner, inner, name='outer'))  # an instance as an operand
    data = np.array([[1, 2]], np.float32)
    np.testing.assert_allclose(outer.eval({x: data}), [[4, 6]])
    path = str(tmp_path / 'nested.model')
    outer.save(path)
    np.testing.assert_allclose(C.Function.load(path).eval({'x': data}), [[4, 6]])
    assert Plus2._op_name() == 'Plus2'
    made = []

    def double_plus(inputs, name, state):
        made.append(name)
        return C.user_function(Plus2(inputs[0], inputs[0], name)) if name == 'inner' else Plus2(*inputs, name)

    C.Function.register_udf_deserialize_callback('Plus2', double_plus)
    try:
        loaded = C.Function.load(path)
        assert sorted(made) == ['inner', 'outer']
        np.testing.assert_allclose(loaded.eval({'x': data}), [[4, 8]])
        # A factory given to load wins over the registered one.
        loaded = C.Function.load(path, udf_factory_callback_map={'Plus2': lambda i, n, s: Plus2(i[0], i[1], n)})
        np.testing.assert_allclose(loaded.eval({'x': data}), [[4, 6]])
    finally:
        from ctk.ops import functions
        functions._registered_deserializers.clear()
