"""cntk.tests.test_utils: what CNTK's examples and notebooks call from CNTK's test helpers."""
import os


def set_device_from_pytest_env():
    """CNTK's helper for its test runs: TEST_DEVICE=cpu makes the CPU the default device, any other value
    GPU 0; without TEST_DEVICE nothing changes (CNTK's examples call it first thing)."""
    from ctk.device import try_set_default_device, cpu, gpu
    device = os.environ.get('TEST_DEVICE')
    if device is None:
        return
    try_set_default_device(cpu() if device == 'cpu' else gpu(0))


__all__ = ['set_device_from_pytest_env']
