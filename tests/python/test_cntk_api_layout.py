# CNTK 2.7's Python API as CNTK laid it out and documented it: the package's modules, the version, the
# cntk_py / _cntk_py functions CNTK scripts and CNTK's test configuration call, typed signatures
# (cntk.layers.typing, @Function, Function.with_signature, update_signature), Function.train/test over
# NumPy data, default_options for user layers, Trainer(None, combine([loss, metric])), (arguments,
# seq_starts) minibatches, reduction_rank=0, and the debugging switches.
import importlib

import numpy as np
import pytest

import cntk as C
from cntk.layers.typing import Tensor, SparseTensor, ParameterTensor, Sequence, SequenceOver, Signature, tensor

CNTK_MODULES = ['cntk.ops', 'cntk.ops.functions', 'cntk.ops.sequence', 'cntk.layers', 'cntk.layers.blocks',
                'cntk.layers.layers', 'cntk.layers.higher_order_layers', 'cntk.layers.sequence',
                'cntk.layers.typing', 'cntk.io', 'cntk.io.transforms', 'cntk.train', 'cntk.train.trainer',
                'cntk.train.training_session', 'cntk.train.distributed', 'cntk.eval', 'cntk.eval.evaluator',
                'cntk.learners', 'cntk.losses', 'cntk.metrics', 'cntk.logging', 'cntk.logging.graph',
                'cntk.logging.progress_print', 'cntk.debugging', 'cntk.debugging.debug', 'cntk.debugging.profiler',
                'cntk.default_options', 'cntk.variables', 'cntk.axis', 'cntk.core', 'cntk.device',
                'cntk.initializer', 'cntk.random', 'cntk.tensor', 'cntk.internal', 'cntk.internal.utils',
                'cntk.internal.sanitize', 'cntk.internal.swig_helper', 'cntk.cntk_py', 'cntk.sequence', '_cntk_py']


@pytest.mark.parametrize('name', CNTK_MODULES)
def test_every_cntk_module_imports(name):
    module = importlib.import_module(name)
    assert module is not None


@pytest.mark.parametrize('name', [m for m in CNTK_MODULES if m.count('.') == 1 and m not in ('cntk.sequence',)])
def test_packages_can_hold_test_folders(name):
    # A real package or module, not an alias of a ctk module: cntk.ops.tests could live beside it.
    module = importlib.import_module(name)
    assert module.__name__ == name


def test_version_is_cntks_api_level_with_ctks_beside():
    import ctk
    assert C.__version__ == '2.7'
    assert C.__ctk_version__ == ctk.__version__


def test_names_scripts_import():
    from cntk.ops import input, relu, element_times, constant  # noqa: F401
    from cntk.train.training_session import training_session, CheckpointConfig  # noqa: F401
    from cntk.internal import _as_tuple, sanitize_input, typemap  # noqa: F401
    from cntk.internal.utils import get_python_function_arguments, map_function_arguments  # noqa: F401
    from cntk.default_options import default_override_or, get_default_override  # noqa: F401
    assert C.layers.Parameter is C.Parameter and C.DATATYPE is np.float32
    # `from .train import *` in CNTK's package also brought the submodules it had imported.
    assert C.trainer.Trainer is C.Trainer and C.distributed.Communicator is C.Communicator
    # CNTK's DataType names: ctk's dtypes are NumPy's.
    from cntk.internal import sanitize_dtype_cntk
    assert sanitize_dtype_cntk('float') == C.cntk_py.DataType_Float == np.float32
    assert sanitize_dtype_cntk(float) == C.cntk_py.DataType_Double
    assert C.InferredDimension == -1 and C.FreeDimension == -3


def test_cntk_py_functions_the_test_configuration_calls():
    import _cntk_py
    C.debugging.set_checked_mode(True)
    assert C.debugging.get_checked_mode()
    C.debugging.set_checked_mode(False)
    C.cntk_py.reset_random_seed(0)
    a = C.parameter((3,), init=C.glorot_uniform()).value
    C.cntk_py.reset_random_seed(0)
    b = C.parameter((3,), init=C.glorot_uniform()).value
    np.testing.assert_array_equal(a, b)
    _cntk_py.set_computation_network_trace_level(0)
    old = C.cntk_py.get_max_num_cpu_threads()
    C.cntk_py.set_max_num_cpu_threads(1)
    assert C.cntk_py.get_max_num_cpu_threads() == 1
    C.cntk_py.set_max_num_cpu_threads(old)


def test_input_is_input_variable():
    x = C.input(3, name='x')
    assert x.shape == (3,) and x.is_input and x.name == 'x'
    s = C.input_variable(Sequence[Tensor[5]])
    assert len(s.dynamic_axes) == 2 and s.shape == (5,)


# ---- typing ----

def test_type_objects_print_and_hold_their_record():
    assert str(Tensor[13, 42]) == 'Tensor[13,42]' and Tensor[13, 42].shape == (13, 42)
    assert [a.name for a in Tensor[13].dynamic_axes] == ['defaultBatchAxis']
    assert SparseTensor[9000].is_sparse
    assert Tensor[np.float64, 3].dtype == np.float64
    assert str(Sequence[SparseTensor[9000]]) == 'Sequence[SparseTensor[9000]]'
    assert [a.name for a in Sequence[Tensor[2]].dynamic_axes] == ['defaultBatchAxis', 'defaultDynamicAxis']
    axis = C.Axis('inputAxis')
    assert str(SequenceOver[axis][Tensor[128]]) == 'SequenceOver[inputAxis][Tensor[128]]'
    assert ParameterTensor[4].dynamic_axes == []
    assert str(tensor) == 'tensor'


def test_type_errors_as_cntk():
    with pytest.raises(TypeError, match='cannot be instantiated'):
        Tensor[32]()
    with pytest.raises(TypeError, match='sequences over sequences'):
        Sequence[Sequence[Tensor[32]]]
    with pytest.raises(ValueError, match='type object'):
        C.internal.sanitize_input(Tensor[32])


def test_function_decorator_keeps_the_python_argument_order():
    @C.Function
    def f(b, a):
        return a - b
    assert [x.name for x in f.arguments] == ['b', 'a']
    assert str(f) == 'Minus(b: Sequence[tensor], a: Sequence[tensor]) -> Sequence[tensor]' or \
        str(f).startswith('Composite(b: ')
    x = C.input_variable(2, name='x')
    y = C.input_variable(2, name='y')
    g = f(x, y)  # b = x, a = y
    np.testing.assert_allclose(g.eval({x: [[1., 2.]], y: [[10., 20.]]}), [[9., 18.]])
    g = f(a=x, b=y)
    np.testing.assert_allclose(g.eval({x: [[1., 2.]], y: [[10., 20.]]}), [[-9., -18.]])


def test_cntk_prints_composites_by_their_root():
    @C.Function
    def g(x, y):
        return x + y

    @C.Function
    def h(x, y):
        return C.exp(x + y)
    assert str(g) == 'Plus(x: Sequence[tensor], y: Sequence[tensor]) -> Sequence[tensor]'
    assert str(h) == 'Composite(x: Sequence[tensor], y: Sequence[tensor]) -> Sequence[tensor]'


def test_with_signature_makes_typed_inputs_and_evaluates_data():
    @C.Function.with_signature(Tensor[2], Tensor[2])
    def f(x, y):
        return x * 2 + y
    assert [a.is_input for a in f.arguments] == [True, True]
    assert str(f) == 'Composite(x: Tensor[2], y: Tensor[2]) -> Tensor[2]'
    out = f(np.array([[1, 2]], np.float32), np.array([[3, 4]], np.float32))
    np.testing.assert_allclose(out, [[5, 8]])


def test_signature_decorator_and_scalar_types():
    @C.Function
    @Signature(x=Tensor[13])
    def f(x):
        return C.sigmoid(x)
    assert f.arguments[0].shape == (13,)

    @C.Function
    def g(x):
        return x + 1
    g.update_signature(np.float64)
    assert g.output.dtype == np.float64


def test_update_signature_binds_placeholders_in_place():
    d = C.layers.Dense(500)
    d.update_signature(Tensor[13, 42])
    assert d.shape == (500,) and d.arguments[0].shape == (13, 42)
    with pytest.raises(TypeError):
        C.layers.Dense(3).update_signature(Tensor[2], Tensor[3])


def test_block_function():
    @C.BlockFunction('Double', 'double')
    def double(x):
        return x * 2
    # As CNTK: a composite named like the block, whose root function is the block.
    assert double.is_composite and double.name == 'double'
    assert double.root_function.is_block and double.root_function.op_name == 'Double'
    x = C.input_variable(2)
    np.testing.assert_allclose(double(x).eval({x: [[1., 3.]]}), [[2., 6.]])


def test_function_train_and_test_on_numpy_data():
    rng = np.random.RandomState(0)
    n = 512
    labels = rng.randint(0, 2, n)
    X = ((rng.randn(n, 2) + 3) * (labels[:, None] + 1)).astype(np.float32)
    Y = np.eye(2, dtype=np.float32)[labels]
    model = C.layers.Dense(2, activation=None)

    @C.Function.with_signature(Tensor[2], Tensor[2])
    def criterion(data, label):
        z = model(data)
        return C.cross_entropy_with_softmax(z, label), C.classification_error(z, label)
    learner = C.sgd(model.parameters, C.learning_parameter_schedule(0.1))
    progress = criterion.train((X, Y), minibatch_size=32, parameter_learners=[learner], max_epochs=3)
    assert len(progress.epoch_summaries) == 3
    assert all(s.samples == n for s in progress.epoch_summaries)
    assert progress.epoch_summaries[-1].loss < progress.epoch_summaries[0].loss
    result = criterion.test((X, Y), minibatch_size=100)
    assert result.samples == n and 0 <= result.metric < 0.5


def test_default_options_reach_user_layers():
    from cntk.default_options import default_options, default_override_or, get_default_override

    def MyLayer(scale=default_override_or(2.0)):
        return get_default_override(MyLayer, scale=scale)
    assert MyLayer() == 2.0 and MyLayer(5.0) == 5.0
    with default_options(scale=3.0):
        assert MyLayer() == 3.0
        with C.default_options_for(MyLayer, scale=4.0):
            assert MyLayer() == 4.0
        assert MyLayer() == 3.0
    with default_options(activation=C.relu):  # a layer option still reaches ctk's layers
        d = C.layers.Dense(2)(C.input_variable(2))
    assert d.eval({d.arguments[0]: [[-100., -100.]]}).min() >= 0


def test_trainer_with_no_model_and_a_combined_criterion():
    x = C.input_variable(2)
    y = C.input_variable(2)
    z = C.layers.Dense(2)(x)
    criterion = C.combine([C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)])
    trainer = C.Trainer(None, criterion, [C.sgd(z.parameters, 0.1)])
    assert trainer.model is None
    assert trainer.train_minibatch({x: np.ones((2, 2), np.float32), y: np.eye(2, dtype=np.float32)})
    assert trainer.previous_minibatch_evaluation_average is not None


def test_minibatch_with_seq_starts():
    x = C.sequence.input_variable(2)
    y = C.input_variable(2)
    z = C.layers.Dense(2)(C.sequence.last(x))
    trainer = C.Trainer(z, (C.squared_error(z, y), None), [C.sgd(z.parameters, 0.1)])
    data = {x: [np.ones((3, 2), np.float32), np.ones((1, 2), np.float32)], y: np.zeros((2, 2), np.float32)}
    assert trainer.train_minibatch((data, [True, True]))
    with pytest.raises(ValueError, match='2 sequences'):
        trainer.train_minibatch((data, [True]))


def test_past_value_continues_a_sequence_across_minibatches():
    # CNTK's seq_starts False: the sequence goes on from the previous minibatch given to the Function.
    x = C.sequence.input_variable(1)
    y = C.sequence.past_value(x, initial_state=-1.0)
    a = np.array([[1.], [2.], [3.]], np.float32)
    b = np.array([[4.], [5.]], np.float32)
    np.testing.assert_array_equal(y.eval(([a], [True]))[0].ravel(), [-1, 1, 2])
    np.testing.assert_array_equal(y.eval(([b], [False]))[0].ravel(), [3, 4])
    np.testing.assert_array_equal(y.eval(([b], [True]))[0].ravel(), [-1, 4])
    # Two steps back reach into the previous minibatch too, and through a short one.
    y2 = C.sequence.past_value(x, initial_state=0.0, time_step=2)
    y2.eval(([a], [True]))
    np.testing.assert_array_equal(y2.eval(([b[:1]], [False]))[0].ravel(), [2])
    np.testing.assert_array_equal(y2.eval(([b], [False]))[0].ravel(), [3, 4])


def test_a_recurrence_split_over_minibatches_equals_the_whole_sequence():
    x = C.sequence.input_variable(3)
    model = C.layers.Recurrence(C.layers.LSTM(4, init=C.glorot_uniform(seed=2)))
    z = model(x)
    seq = np.random.RandomState(3).rand(7, 3).astype(np.float32)
    whole = z.eval([seq])[0]
    first = z.eval(([seq[:4]], [True]))[0]
    rest = z.eval(([seq[4:]], [False]))[0]
    np.testing.assert_allclose(np.concatenate([first, rest]), whole, rtol=1e-5, atol=1e-6)


def test_continuing_sequences_get_no_gradient_from_the_previous_minibatch():
    x = C.sequence.input_variable(1, needs_gradient=True)
    init = C.parameter(shape=(1,), init=0.5)
    y = C.sequence.reduce_sum(C.sequence.past_value(x, initial_state=init))
    y.eval(([np.ones((2, 1), np.float32)], [True]))
    # A continuing sequence's first frame is the carried one: the initial state gets no gradient.
    g = y.grad(([np.ones((2, 1), np.float32)], [False]), wrt=[init])
    np.testing.assert_array_equal(g, [0.])
    g = y.grad(([np.ones((2, 1), np.float32)], [True]), wrt=[init])
    np.testing.assert_array_equal(g, [1.])


def test_a_continuing_sequence_without_a_previous_minibatch_is_an_error():
    x = C.sequence.input_variable(1)
    y = C.sequence.past_value(x)
    with pytest.raises(ValueError, match='continues the previous minibatch'):
        y.eval(([np.ones((2, 1), np.float32)], [False]))


def test_convolution_reduction_rank_zero():
    x = C.input_variable((8, 8))
    c = C.layers.Convolution2D((3, 3), 4, reduction_rank=0, init=C.glorot_uniform(seed=1))
    y = c(x)
    assert y.shape == (4, 6, 6)
    assert c.W.shape == (4, 1, 3, 3)
    # The same as an explicit one-channel input with the same kernel.
    data = np.random.RandomState(1).rand(2, 8, 8).astype(np.float32)
    x1 = C.input_variable((1, 8, 8))
    ref = C.convolution(c.W, x1, auto_padding=[False]) + c.b
    np.testing.assert_allclose(y.eval({x: data}), ref.eval({x1: data[:, None]}), rtol=1e-5)
    with pytest.raises(ValueError, match='reduction_rank'):
        C.layers.Convolution2D((3, 3), 4, reduction_rank=2)


def test_node_timing():
    x = C.input_variable(2)
    z = C.relu(x)
    C.debugging.set_node_timing(True)
    z.eval({x: [[1., -1.]]})
    z.print_node_timing()
    C.debugging.set_node_timing(False)


def test_debug_model_says_it_is_not_there():
    with pytest.raises(NotImplementedError, match='debug_model'):
        C.debugging.debug_model(C.relu(C.input_variable(1)))


def test_distributed_names_are_cntks():
    from cntk.train import distributed
    assert distributed.Communicator.num_workers() == 1
    for name in ('Communicator', 'WorkerDescriptor', 'DistributedLearner', 'mpi_communicator',
                 'data_parallel_distributed_learner', 'block_momentum_distributed_learner'):
        assert hasattr(distributed, name), name
    assert isinstance(distributed.data_parallel_distributed_learner(C.sgd([C.parameter(1)], 0.1)),
                      distributed.DistributedLearner)


def test_minibatch_source_from_data():
    from cntk.io import MinibatchSourceFromData
    X = np.arange(10, dtype=np.float32).reshape(5, 2)
    Y = np.eye(5, dtype=np.float32)
    src = MinibatchSourceFromData(dict(x=X, y=Y), max_samples=7)
    x = C.input_variable(2)
    mb = src.next_minibatch(3, input_map={x: src.streams.x})
    assert mb[x].num_samples == 3 and not mb[x].sweep_end
    mb = src.next_minibatch(3)
    assert mb[src.streams.x].num_samples == 2 and mb[src.streams.x].sweep_end  # the sweep ends the minibatch
    assert src.next_minibatch(3)[src.streams.x].num_samples == 2  # max_samples: 7
    assert src.next_minibatch(3) == {}
    with pytest.raises(ValueError, match='different numbers'):
        MinibatchSourceFromData(dict(x=X, y=Y[:3]))


def test_training_session_star_import_gives_sys_as_cntks_did():
    # CNTK's distributed CIFAR-10 examples use sys after `from cntk.train.training_session import *` only.
    scope = {}
    exec('from cntk.train.training_session import *', scope)
    assert scope['sys'].maxsize > 0 and 'training_session' in scope


def test_star_imports_hand_on_what_cntks_modules_imported():
    # CNTK's modules had no __all__: their star imports passed on the names they imported themselves,
    # which CNTK's own tests and scripts rely on.
    ns = {}
    exec('from cntk.ops import *', ns)
    assert ns['sequence'].past_value and ns['past_value'] is C.sequence.past_value and ns['future_value']
    exec('from cntk.layers import *', ns)
    assert ns['combine'] is C.combine and ns['glorot_uniform'] is C.initializer.glorot_uniform
    exec('from cntk.variables import *; from cntk.ops.functions import *', ns)
    assert ns['sanitize_value'] and ns['cntk_py'] is C.cntk_py
    v = ns['sanitize_value']((2, 2), 3.0, np.float32, None)
    np.testing.assert_array_equal(v.asarray(), np.full((2, 2), 3.0))


def test_graph_search_finds_variables_and_keeps_a_combine_as_a_node():
    from cntk.logging.graph import depth_first_search, find_by_name, plot
    i1 = C.input_variable((2, 3), name='i1')
    c1 = C.constant(shape=(2, 3), value=6, name='c1')
    p1 = C.parameter(shape=(3, 2), init=7, name='p1')
    op2 = C.times(C.plus(i1, c1, name='op1'), p1, name='op2')
    label = C.input_variable((), name='label')
    root = C.combine([op2, C.minus(label, C.constant(1, name='c2'), name='minus')], name='all')
    names = [n.name for n in depth_first_search(root, lambda x: True)]
    assert names == ['all', 'op2', 'op1', 'i1', 'c1', 'p1', 'minus', 'label', 'c2']
    assert isinstance(find_by_name(root, 'c1'), C.Constant) and isinstance(op2.find_by_name('p1'), C.Parameter)
    assert len(op2.find_all_with_name('i1')) == 1
    dot = plot(root)
    assert dot.find('Plus') < dot.find('Times')  # inputs before the Functions that read them
    from cntk.ops import Constant, Parameter  # noqa: F401  (CNTK's ops module had them)
