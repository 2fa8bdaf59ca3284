"""GPU clocks, temperature and power around a judging, read through NVML (trusted side).

Recorded with every judging on an NVIDIA device so that a slow run can be told apart from a hot or
throttled card. NVML is opened with ctypes (libnvidia-ml.so.1, or KJUDGE_NVML_LIB), so nothing
beyond the driver is needed; where it cannot be opened the state is simply not recorded. MetaX
cards have no NVML: their state is not read yet (mx-smi has no stable library interface).
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

from judge.device import DeviceInfo

NVML_SUCCESS = 0
CLOCK_SM, CLOCK_MEM = 1, 2
TEMPERATURE_GPU = 0
THROTTLE_REASONS = {
    0x1: "idle", 0x2: "application_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
    0x100: "display_clocks",
}


class Nvml:
    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        if lib.nvmlInit_v2() != NVML_SUCCESS:
            raise OSError("nvmlInit failed")

    def handle(self, device: DeviceInfo) -> ctypes.c_void_p | None:
        handle = ctypes.c_void_p()
        if device.uuid:
            status = self.lib.nvmlDeviceGetHandleByUUID(device.uuid.encode(), ctypes.byref(handle))
        else:  # CUDA and NVML agree on the order only without CUDA_VISIBLE_DEVICES remapping
            index = int(device.torch_name.partition(":")[2] or 0)
            status = self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle))
        return handle if status == NVML_SUCCESS else None

    def _uint(self, function: str, handle, *args) -> int | None:
        value = ctypes.c_uint()
        fn = getattr(self.lib, function, None)
        if fn is None or fn(handle, *args, ctypes.byref(value)) != NVML_SUCCESS:
            return None
        return value.value

    def state(self, handle) -> dict:
        reasons = ctypes.c_ulonglong()
        fn = getattr(self.lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        throttled = None
        if fn is not None and fn(handle, ctypes.byref(reasons)) == NVML_SUCCESS:
            throttled = [name for bit, name in THROTTLE_REASONS.items() if reasons.value & bit]
        power_mw = self._uint("nvmlDeviceGetPowerUsage", handle)
        return {
            "sm_clock_mhz": self._uint("nvmlDeviceGetClockInfo", handle, CLOCK_SM),
            "memory_clock_mhz": self._uint("nvmlDeviceGetClockInfo", handle, CLOCK_MEM),
            "temperature_c": self._uint("nvmlDeviceGetTemperature", handle, TEMPERATURE_GPU),
            "power_w": None if power_mw is None else round(power_mw / 1000, 1),
            "throttle_reasons": throttled,
        }


@cache
def _nvml() -> Nvml | None:
    try:
        return Nvml(ctypes.CDLL(os.environ.get("KJUDGE_NVML_LIB", "libnvidia-ml.so.1")))
    except (OSError, AttributeError):
        return None


def gpu_state(device: DeviceInfo) -> dict | None:
    """Clocks (MHz), temperature (°C), power (W) and throttle reasons now, or None if unreadable."""
    if device.kind != "cuda":
        return None
    nvml = _nvml()
    handle = nvml.handle(device) if nvml else None
    return nvml.state(handle) if handle else None
