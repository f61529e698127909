"""cntk.device: the devices ctk computes on and the process-wide default device.

A DeviceDescriptor is ctk's Device. Graph evaluation (eval, forward, grad), training and new parameter
values use the default device unless a call names one; parameters move to the device a graph computes on.
The default is the CPU (or what CTK_DEFAULT_DEVICE says: cpu, gpu, gpu:N, auto), where CNTK picked the
best GPU by itself: scripts call try_set_default_device(gpu(0)) to train on a GPU, as CNTK's examples do.
"""

from . import _ctk

DeviceDescriptor = _ctk.DeviceDescriptor


class DeviceKind:
    """CNTK's DeviceKind: what DeviceDescriptor.type() returns."""
    CPU = 0
    GPU = 1


def cpu():
    """The CPU device."""
    return _ctk._cpu_device()


def gpu(device_id):
    """GPU `device_id`; ValueError when this machine has no such GPU (the message says why)."""
    return _ctk._gpu_device(int(device_id))


def all_devices():
    """The CPU, then every GPU this process can use."""
    return _ctk._all_devices()


def use_default_device():
    """The process-wide default device."""
    return _ctk._default_device()


def try_set_default_device(new_default_device, acquire_device_lock=False):
    """Makes `new_default_device` the default; False when it is not available. ctk never locks a GPU for
    one process, so acquire_device_lock changes nothing for a GPU; a CPU cannot be locked, so asking for
    its lock returns False and leaves the default as it was (CNTK's answer)."""
    if acquire_device_lock and new_default_device.type() == DeviceKind.CPU:
        return False
    return _ctk._try_set_default_device(new_default_device)


def set_excluded_devices(excluded_devices):
    """CNTK excluded these from its automatic choice of a GPU; ctk makes no such choice from Python
    (only CTK_DEFAULT_DEVICE=auto picks GPU 0), so the call is accepted and changes nothing."""
    list(excluded_devices)  # CNTK took any iterable of DeviceDescriptors


class GPUProperties:
    """CNTK's get_gpu_properties result."""

    def __init__(self, d):
        self.device_id = d['device_id']
        self.name = d['name']
        self.version_major = d['version_major']
        self.version_minor = d['version_minor']
        self.multiprocessors = d['multiprocessors']
        self.total_memory = d['total_memory']

    def __repr__(self):
        return 'GPUProperties(device_id=%d, name=%r, compute capability %d.%d, %d MB)' % (
            self.device_id, self.name, self.version_major, self.version_minor, self.total_memory)


def get_gpu_properties(device):
    """Name, compute capability and memory (MB) of a GPU device."""
    return GPUProperties(_ctk._gpu_properties(device))


class Verdict:
    """Whether this build of ctk runs on a GPU (or under the installed driver), and why: `kind` is one of
    'runs natively', 'runs via PTX JIT', 'driver too old', 'PTX needs a newer driver', 'no compatible
    code', 'no driver'; `fix` says what to do (for the PTX JIT, how to skip it; empty when nothing is to
    be done)."""

    def __init__(self, d):
        self.kind = d['kind']
        self.runnable = d['runnable']
        self.reason = d['reason']
        self.fix = d['fix']

    def __repr__(self):
        return 'Verdict(%r, runnable=%r, reason=%r, fix=%r)' % (self.kind, self.runnable, self.reason, self.fix)


class GPUInfo:
    """One GPU as `ctk info` reports it (memory in MB); `verdict` is None when the build's architecture
    list cannot be checked."""

    def __init__(self, d):
        self.device_id = d['device_id']
        self.name = d['name']
        self.compute_capability = tuple(d['compute_capability'])
        self.multiprocessors = d['multiprocessors']
        self.total_memory = d['total_memory']
        self.free_memory = d['free_memory']
        self.verdict = Verdict(d['verdict']) if d['verdict'] is not None else None

    def __repr__(self):
        return 'GPUInfo(%d, %r, compute capability %d.%d, %s)' % (
            self.device_id, self.name, self.compute_capability[0], self.compute_capability[1],
            self.verdict.kind if self.verdict else 'not checked')


class CPUInfo:
    """The CPU doctor: `vendor`, `model_name`, `family`, `model`, `isa` (a list: 'avx', 'avx2', 'avx512',
    'avx512_bf16', 'avx512_fp16', 'amx_bf16'), `level` ('SSE' .. 'AVX-512'); OpenBLAS's `openblas_config`,
    `openblas_core`, `openblas_level` and `openblas_coretype` (OPENBLAS_CORETYPE if it is set); oneDNN's
    `onednn_version` and `onednn_isa`; the f32 GEMM route: `gemm` ('openblas' or 'onednn'), `gemm_setting`
    ('auto', or what CTK_GEMM / set_cpu_gemm asked for), `gemm_reason` and `gemm_min_work` (on the oneDNN
    route, products of fewer multiply-adds stay on OpenBLAS); the verdict: `below_machine`, `verdict`, `fix` (empty when nothing needs doing)."""

    def __init__(self, d):
        self.__dict__.update(d)
        self.isa = list(d['isa'])

    def __repr__(self):
        return 'CPUInfo(%r, %s, gemm=%s)' % (self.model_name, self.level, self.gemm)


class Info:
    """What `ctk info` prints, as data. `build`: a dict of the banner's fields (version, git_sha,
    build_type, build_target, math_lib, built_time, cuda_version, cudnn_version, nccl_version,
    mpi_distribution, mpi_version, cuda_architectures; empty strings where the build has none).
    `driver_version`/`runtime_version`: CUDA versions as 13000 = 13.0 (0: none). `gpus`: a GPUInfo per
    usable GPU; when there is none, `unavailable_reason` says why and `driver_verdict` (a Verdict or None)
    what the driver lacks. `cpu`: the CPU doctor (a CPUInfo). str(info) is the report `ctk info` prints."""

    def __init__(self, d):
        self.build = dict(d['build'])
        self.driver_version = d['driver_version']
        self.runtime_version = d['runtime_version']
        self.gpus = [GPUInfo(g) for g in d['gpus']]
        self.unavailable_reason = d['unavailable_reason']
        self.driver_verdict = Verdict(d['driver_verdict']) if d['driver_verdict'] is not None else None
        self.cpu = CPUInfo(d['cpu'])
        self._report = d['report']

    def __str__(self):
        return self._report

    def __repr__(self):
        return 'Info(ctk %s %s build, %d GPU%s)' % (self.build['version'], self.build['build_target'],
                                                    len(self.gpus), '' if len(self.gpus) == 1 else 's')


def info():
    """The build banner, the CUDA driver and runtime, and for each GPU whether this build runs on it and
    the fix when it does not (ctk's addition; the CLI's `ctk info` prints str(info())). Never raises for
    a missing GPU or driver: it says so."""
    return Info(_ctk._info())


def set_cpu_gemm(library):
    """Which library computes f32 matrix products on the CPU: 'openblas', 'onednn', or 'auto' (the
    default: OpenBLAS where its kernels fit the CPU, oneDNN where they fall below it; see
    `info().cpu`). Overrides the CTK_GEMM environment variable. Results differ only by f32 rounding."""
    _ctk._set_cpu_gemm(str(library))


def cpu_gemm():
    """The library f32 matrix products use now: 'openblas' or 'onednn'."""
    return _ctk._cpu_gemm()


def set_cpu_channels_last(on):
    """Whether CPU convolutions write channels-last activations, which batch normalization, pooling and
    the element-wise ops keep (the default: no reorders between them). False keeps every activation
    row-major, as CTK_CHANNELS_LAST=0 does; results differ only by f32 rounding."""
    _ctk._set_cpu_channels_last(bool(on))


def cpu_channels_last():
    """True when CPU convolutions write channels-last activations (see set_cpu_channels_last)."""
    return _ctk._cpu_channels_last()


__all__ = ['DeviceDescriptor', 'DeviceKind', 'cpu', 'gpu', 'all_devices', 'use_default_device',
           'try_set_default_device', 'set_excluded_devices', 'get_gpu_properties', 'info', 'Info', 'GPUInfo',
           'CPUInfo', 'set_cpu_gemm', 'cpu_gemm',
           'set_cpu_channels_last', 'cpu_channels_last',
           'Verdict']
