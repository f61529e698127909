"""cntk.ops.functions: Function, load_model and the model formats, and CNTK's UserFunction."""
import importlib

from .._ctk import Function, CloneMethod, ModelFormat, BackPropState, load_model  # noqa: F401
from .. import _ctk


class OutputVariable:
    """What output_variable returns: the shape, dtype and dynamic axes of a user function's output."""

    def __init__(self, shape, dtype, dynamic_axes, needs_gradient=True, name=''):
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.dtype, self.dynamic_axes = dtype, list(dynamic_axes)
        self.needs_gradient, self.name = needs_gradient, name


def output_variable(shape, dtype, dynamic_axes, needs_gradient=True, name=''):
    """CNTK's output_variable, for UserFunction.infer_outputs."""
    return OutputVariable(shape, dtype, dynamic_axes, needs_gradient, name)


class UserFunction:
    """CNTK's UserFunction. Subclass it with
      infer_outputs(self) -> [output_variable(shape, dtype, dynamic_axes)],
      forward(self, arguments, device=None, outputs_to_retain=None) -> (state, result) for one output, or
        forward(self, arguments, outputs, device=None, outputs_to_retain=None) -> state, filling the dict
        `outputs` (keyed by self.outputs) for several,
      backward(self, state, root_gradients) -> the gradient for a function of one input, or
        backward(self, state, root_gradients, variables) for several, filling `variables` (keyed by the
        inputs whose gradients are needed),
    and wrap an instance with user_function(...). `arguments` is one array for one input, else a tuple;
    `root_gradients` one array for one output, else a dict. With as_numpy=False they are Values.
    Without a backward method no gradient flows through. A model file keeps the function as CNTK's did:
    its module, class, op_name and what serialize() returns; Function.load rebuilds it with the class's
    static deserialize(inputs, name, state), or a factory of udf_factory_callback_map (by op_name).
    ctk difference: sequence data arrives padded ([batch, max_length, ...])."""

    def __init__(self, inputs, as_numpy=True, attributes=None, name=''):
        # An input may be a Function or another user function instance (its op joins the graph; one op
        # for an instance given twice).
        made = {}
        self.inputs = [_operand(i, made) for i in inputs]
        self.as_numpy = as_numpy
        self.attributes = attributes or {}
        self.name = name
        self.outputs = []

    @classmethod
    def _op_name(cls):
        return cls.__name__

    @property
    def op_name(self):
        return type(self)._op_name()

    @property
    def output(self):
        if len(self.outputs) != 1:
            raise ValueError('%s has %d outputs' % (self.op_name, len(self.outputs)))
        return self.outputs[0]

    def infer_outputs(self):
        raise NotImplementedError('%s must define infer_outputs' % self.op_name)

    def forward(self, *args, **kwargs):
        raise NotImplementedError('%s must define forward' % self.op_name)

    def backward(self, *args, **kwargs):
        raise NotImplementedError('%s has no backward' % self.op_name)

    def serialize(self):
        """The state a model file keeps for this function (a dict of bool, int, float, str, NumPy arrays,
        lists and dicts). Override it, with a static deserialize(inputs, name, state), for a function
        with state of its own."""
        return {}

    def __ctk_function__(self):
        """A graph node running this user function: CNTK's UserFunction was itself a Function, so an
        instance can be an operand of other ops (x * MyOp(x, y)). Each use makes its own node (a node
        kept here would keep its graph alive through the callbacks it holds)."""
        return user_function(self)


def _operand(x, made):
    if isinstance(x, UserFunction):
        if id(x) not in made:
            made[id(x)] = user_function(x)
        x = made[id(x)]
    return x.output if isinstance(x, Function) else x


def user_function(user_func):
    """The Function that runs `user_func` (a UserFunction instance) as an op of the graph. A Function
    (a graph already holding user functions) comes back as its composite, as CNTK's did."""
    if isinstance(user_func, Function):
        from . import as_composite
        return as_composite(user_func)
    if not isinstance(user_func, UserFunction):
        raise TypeError('user_function expects a UserFunction instance, got %s' % type(user_func).__name__)
    uf = user_func

    def data(value):
        return value.asarray() if uf.as_numpy else value

    def infer(inputs):
        # The inputs the op has now (a placeholder may have been replaced since the instance was made).
        uf.inputs = list(inputs)
        outputs = uf.infer_outputs()
        uf._outputs_need_gradient = [o.needs_gradient for o in outputs]
        return [(o.shape, o.dtype, o.dynamic_axes) for o in outputs]

    def forward(values, is_training):
        args = [data(v) for v in values]
        args = args[0] if len(args) == 1 else tuple(args)
        if len(uf.outputs) == 1:
            state, result = uf.forward(args, None, None)
            return state, [result]
        outputs = {o: None for o in uf.outputs}
        state = uf.forward(args, outputs, None, None)
        return state, [outputs[o] for o in uf.outputs]

    def backward(state, values, output_grads, needs):
        # Outputs declared with needs_gradient=False pass no gradient back: backward is not called.
        if not any(uf._outputs_need_gradient):
            return [None] * len(values)
        if len(output_grads) == 1:
            rg = output_grads[0]
        else:
            rg = {o: g for o, g in zip(uf.outputs, output_grads)}
        # CNTK's rule: a function of one input returns its gradient; one of several fills the dict of the
        # inputs whose gradients are needed.
        grads = [None] * len(values)
        if len(uf.inputs) > 1:
            variables = {uf.inputs[i]: None for i in range(len(values)) if needs[i]}
            uf.backward(state, rg, variables)
            for i in range(len(values)):
                if needs[i]:
                    grads[i] = variables.get(uf.inputs[i])
        elif needs and needs[0]:
            grads[0] = uf.backward(state, rg)
        return grads

    has_backward = type(uf).backward is not UserFunction.backward
    f = _ctk._user_function(uf.op_name, uf.inputs, infer, forward, backward if has_backward else None, uf.name,
                            lambda: _serialized(uf))
    uf.outputs = list(f.outputs)
    return f


_SERIALIZATION_VERSION = 1


def _serialized(uf):
    """What a model file keeps of a user function (CNTK's layout, so each reads the other's files)."""
    return {'class': type(uf).__name__, 'module': type(uf).__module__, 'op_name': uf.op_name,
            'state': uf.serialize(), 'version': _SERIALIZATION_VERSION}


_registered_deserializers = {}


def register_udf_deserialize_callback(op_name, callback):
    """CNTK's Function.register_udf_deserialize_callback: from now on, a saved user function of this
    op_name is rebuilt by callback(inputs, name, state) (a udf_factory_callback_map given to load wins)."""
    _registered_deserializers[op_name] = callback


def _deserialize_user_function(inputs, name, saved, factory_map=None):
    """Rebuilds a saved user function (CNTK's _UDFDeserializeCallbackWrapper): the factory given for its
    op_name, else its class's static deserialize, called as factory(inputs, name, state)."""
    module, cls, op_name = saved.get('module'), saved.get('class'), saved.get('op_name')
    if factory_map and op_name in factory_map:
        factory = factory_map[op_name]
    elif op_name in _registered_deserializers:
        factory = _registered_deserializers[op_name]
    else:
        try:
            klass = getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError, TypeError, ValueError) as e:
            raise ValueError("cannot load the user function '%s': its class %s.%s cannot be imported (%s); "
                             "pass udf_factory_callback_map={'%s': factory} to Function.load"
                             % (name, module, cls, e, op_name)) from None
        factory = getattr(klass, 'deserialize', None)
    if factory is None:
        raise ValueError("cannot load the user function '%s': %s.%s has no static deserialize method and no "
                         "factory was given for op '%s' in udf_factory_callback_map" % (name, module, cls, op_name))
    f = factory(list(inputs), name, saved.get('state', {}))
    return user_function(f) if isinstance(f, UserFunction) else f


Function.register_udf_deserialize_callback = staticmethod(register_udf_deserialize_callback)

__all__ = ['Function', 'CloneMethod', 'ModelFormat', 'BackPropState', 'load_model', 'UserFunction',
           'user_function', 'output_variable']
