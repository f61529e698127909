"""cntk.device: descriptors, the default device, and computing where a call says (GPU cases skip
without a GPU; the logical device CPU:1 is not reachable from Python, so the CPU cases use the CPU)."""
import numpy as np
import pytest

import cntk as C
from cntk.device import DeviceKind, all_devices, cpu, gpu, try_set_default_device, use_default_device

HAVE_GPU = len(all_devices()) > 1


def test_descriptors_compare_and_print_as_cntk():
    assert cpu() == cpu() and hash(cpu()) == hash(cpu())
    assert cpu().type() == DeviceKind.CPU and cpu().id() == 0 and not cpu().is_locked()
    assert str(cpu()) == 'CPU'
    assert all_devices()[0] == cpu()
    assert use_default_device() == cpu()
    assert cpu() != 'CPU'


def test_missing_gpu_is_a_value_error_that_says_why():
    n = len(all_devices()) - 1
    with pytest.raises(ValueError, match='no GPU %d' % n):
        gpu(n)
    with pytest.raises(ValueError, match='not a GPU'):
        C.device.get_gpu_properties(cpu())


def test_try_set_default_device_keeps_the_cpu_when_asked():
    assert try_set_default_device(cpu())
    assert use_default_device() == cpu()


def test_values_views_and_evaluation_name_their_device():
    x = C.input_variable(3)
    z = C.plus(x, C.constant(np.ones(3, np.float32)))
    v = C.Value(batch=np.ones((2, 3), np.float32), device=cpu())
    assert v.device == cpu()
    a = C.NDArrayView.from_dense(np.ones((2, 3), np.float32), device=cpu())
    assert a.device == cpu()
    np.testing.assert_array_equal(z.eval({x: np.zeros((2, 3), np.float32)}, device=cpu()), np.ones((2, 3)))
    g = z.grad({x: np.zeros((1, 3), np.float32)}, wrt=[x], device=cpu())
    np.testing.assert_array_equal(g, np.ones((1, 3)))
    with pytest.raises(TypeError, match='DeviceDescriptor'):
        z.eval({x: np.zeros((2, 3), np.float32)}, device=0)


def test_trainer_takes_a_device():
    x = C.input_variable(2)
    y = C.input_variable(2)
    z = C.layers.Dense(2)(x)
    loss = C.cross_entropy_with_softmax(z, y)
    t = C.Trainer(z, (loss, None), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    data = {x: np.eye(2, dtype=np.float32), y: np.eye(2, dtype=np.float32)}
    assert t.train_minibatch(data, device=cpu())
    assert t.test_minibatch(data, device=cpu()) >= 0


@pytest.mark.skipif(not HAVE_GPU, reason='no GPU')
def test_gpu_training_matches_the_cpu():
    def run(device):
        C.cntk_py.set_fixed_random_seed(3)
        x = C.input_variable(4)
        y = C.input_variable(3)
        z = C.layers.Sequential([C.layers.Dense(8, activation=C.relu), C.layers.Dense(3)])(x)
        loss = C.cross_entropy_with_softmax(z, y)
        t = C.Trainer(z, (loss, C.classification_error(z, y)),
                      [C.adam(z.parameters, C.learning_parameter_schedule(0.01), C.momentum_schedule(0.9))])
        rng = np.random.RandomState(0)
        for _ in range(5):
            xs = rng.rand(16, 4).astype(np.float32)
            ys = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 16)]
            t.train_minibatch({x: xs, y: ys}, device=device)
        return [p.value for p in z.parameters], z.eval({x: np.ones((2, 4), np.float32)}, device=device)

    props = C.device.get_gpu_properties(gpu(0))
    assert props.total_memory > 0 and props.name
    cpu_params, cpu_out = run(cpu())
    gpu_params, gpu_out = run(gpu(0))
    for a, b in zip(cpu_params, gpu_params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cpu_out, gpu_out, rtol=1e-4, atol=1e-5)
    v = C.Value(batch=np.ones((2, 3), np.float32), device=gpu(0))
    assert v.device == gpu(0) and str(gpu(0)) == 'GPU[0]'
    np.testing.assert_array_equal(v.asarray(), np.ones((2, 3)))


def test_info_reports_the_build_and_every_gpu_with_a_verdict():
    import ctk
    info = ctk.device.info()
    assert info.build['version'] == C.__ctk_version__ == ctk.__version__
    assert info.build['build_target'] in ('CPU', 'GPU')
    assert 'OpenBLAS' in info.build['math_lib']
    report = str(info)
    assert report.startswith('-' * 67 + '\nBuild info: \n')
    assert '\t\tBuild SHA1: %s\n' % info.build['git_sha'] in report
    assert len(info.gpus) == len(all_devices()) - 1
    if info.build['build_target'] == 'GPU':
        assert '\t\tCUDA version: %s\n' % info.build['cuda_version'] in report
        assert info.runtime_version >= 12000
    else:
        assert info.build['cuda_version'] == '' and 'CUDA: not built in' in report
    if info.gpus:
        g = info.gpus[0]
        assert g.name in report and g.total_memory > 0 and len(g.compute_capability) == 2
        assert g.verdict is not None and g.verdict.runnable
        assert ('Device[0] verdict: %s' % g.verdict.kind) in report
    else:
        assert 'No GPUs found' in report and info.unavailable_reason
        assert ('\t\treason: %s\n' % info.unavailable_reason) in report
        if info.driver_verdict is not None:  # a GPU build without a usable driver names the fix
            assert not info.driver_verdict.runnable and info.driver_verdict.fix in report
    assert C.device.info().build == info.build  # cntk.device is the same module


def test_trainer_cuda_graph_switch():
    x = C.input_variable(2)
    y = C.input_variable(2)
    z = C.layers.Dense(2)(x)
    loss = C.cross_entropy_with_softmax(z, y)
    lr = C.learning_parameter_schedule(0.1)
    t = C.Trainer(z, (loss, None), C.sgd(z.parameters, lr), cuda_graph=True)
    assert t.cuda_graph and t.cuda_graph_replays == 0
    t.train_minibatch({x: np.ones((4, 2), np.float32), y: np.eye(2, dtype=np.float32)[[0, 1, 0, 1]]})
    assert t.cuda_graph_replays == 0  # a CPU step is never recorded
    t.cuda_graph = False
    assert not t.cuda_graph and t.cuda_graph_status == 'CUDA Graphs are off'


def test_cpu_doctor_and_gemm_route():
    cpu = C.device.info().cpu
    assert cpu.vendor and cpu.level in ('SSE', 'AVX', 'AVX2', 'AVX-512')
    assert cpu.gemm in ('openblas', 'onednn') and cpu.gemm_reason
    assert cpu.gemm_min_work > 0 if cpu.gemm == 'onednn' else cpu.gemm_min_work == 0
    assert 'OpenBLAS' in cpu.openblas_config and cpu.onednn_version
    assert ('f32 GEMM: ' in str(C.device.info())) and ('verdict: %s' % cpu.verdict) in str(C.device.info())
    x = C.input_variable(300)
    w = C.parameter((300, 200), init=C.glorot_uniform(seed=1))
    data = np.random.RandomState(0).randn(64, 300).astype(np.float32)
    results = {}
    try:
        for library in ('openblas', 'onednn'):
            C.device.set_cpu_gemm(library)
            assert C.device.cpu_gemm() == library
            results[library] = C.times(x, w).eval({x: data})
        with pytest.raises(ValueError, match="'mkl' is not a CPU GEMM library"):
            C.device.set_cpu_gemm('mkl')
    finally:
        C.device.set_cpu_gemm('auto')
    assert C.device.cpu_gemm() == cpu.gemm
    want = data.astype(np.float64) @ w.value.astype(np.float64)
    for library, got in results.items():
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=library)


def test_cpu_channels_last_switch_gives_the_same_numbers():
    x = C.input_variable((3, 8, 8))
    conv = C.layers.Convolution2D((3, 3), 16, pad=True, activation=C.relu, init=C.glorot_uniform(seed=1))
    z = C.layers.Sequential([conv, C.layers.BatchNormalization(), C.layers.MaxPooling((2, 2), strides=2)])(x)
    data = np.random.RandomState(1).rand(4, 3, 8, 8).astype(np.float32)
    assert C.device.cpu_channels_last()
    try:
        on = z.eval({x: data})
        C.device.set_cpu_channels_last(False)
        assert not C.device.cpu_channels_last()
        off = z.eval({x: data})
    finally:
        C.device.set_cpu_channels_last(True)
    np.testing.assert_allclose(on, off, rtol=1e-5, atol=1e-5)
