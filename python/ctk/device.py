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
    one process, so acquire_device_lock changes nothing."""
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


__all__ = ['DeviceDescriptor', 'DeviceKind', 'cpu', 'gpu', 'all_devices', 'use_default_device',
           'try_set_default_device', 'set_excluded_devices', 'get_gpu_properties']
