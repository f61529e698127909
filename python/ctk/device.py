"""cntk.device: ctk's Python package computes on the CPU for now; these functions say so in CNTK's terms."""


class DeviceDescriptor:
    """A compute device (CNTK's DeviceDescriptor): only the CPU is available from Python for now."""

    def __init__(self, kind='cpu', device_id=-1):
        self._kind, self._id = kind, device_id

    def type(self):
        return 0 if self._kind == 'cpu' else 1

    @property
    def id(self):
        return self._id

    def __eq__(self, other):
        return isinstance(other, DeviceDescriptor) and (self._kind, self._id) == (other._kind, other._id)

    def __hash__(self):
        return hash((self._kind, self._id))

    def __repr__(self):
        return 'CPU' if self._kind == 'cpu' else 'GPU[%d]' % self._id


def cpu():
    return DeviceDescriptor('cpu', -1)


def gpu(device_id):
    raise ValueError('gpu(%d): ctk\'s Python package runs on the CPU only for now' % device_id)


def all_devices():
    return [cpu()]


def use_default_device():
    return cpu()


def try_set_default_device(new_default_device, acquire_device_lock=False):
    return new_default_device == cpu()


__all__ = ['DeviceDescriptor', 'cpu', 'gpu', 'all_devices', 'use_default_device', 'try_set_default_device']
