"""GPU clocks, temperature, power and per-process memory, read through NVML (trusted side).

Recorded with every judging on an NVIDIA device so that a slow run can be told apart from a hot or
throttled card; the device memory a sandboxed run holds is watched against its limit
(`GpuMemoryWatch`), from outside the sandbox, where the submission cannot reach the figures.
NVML is opened with ctypes (libnvidia-ml.so.1, or KJUDGE_NVML_LIB), so nothing
beyond the driver is needed; where it cannot be opened the state is simply not recorded. MetaX
cards have no NVML: their state is not read yet (mx-smi has no stable library interface).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from functools import cache

from judge.host.device import DeviceInfo
from judge.settings import settings

NVML_SUCCESS = 0
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_VALUE_NOT_AVAILABLE = 2**64 - 1
CLOCK_SM, CLOCK_MEM = 1, 2
TEMPERATURE_GPU = 0
THROTTLE_REASONS = {
    0x1: "idle", 0x2: "application_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
    0x100: "display_clocks",
}


class ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_t, as _v3 fills it
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


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

    def process_memory(self, handle) -> dict[int, int] | None:
        """Device memory (bytes) held by each process with a context on the GPU, by host pid."""
        fn = getattr(self.lib, "nvmlDeviceGetComputeRunningProcesses_v3", None)
        if fn is None:
            return None
        size = 64
        for _ in range(4):
            infos, count = (ProcessInfo * size)(), ctypes.c_uint(size)
            status = fn(handle, ctypes.byref(count), infos)
            if status == NVML_SUCCESS:
                return {infos[i].pid: infos[i].usedGpuMemory for i in range(count.value)
                        if infos[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE}
            if status != NVML_ERROR_INSUFFICIENT_SIZE:
                return None
            size = max(2 * size, count.value + 16)
        return None

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
        return Nvml(ctypes.CDLL(settings().nvml_lib or "libnvidia-ml.so.1"))
    except (OSError, AttributeError):
        return None


def gpu_state(device: DeviceInfo) -> dict | None:
    """Clocks (MHz), temperature (°C), power (W) and throttle reasons now, or None if unreadable."""
    if device.kind != "cuda":
        return None
    nvml = _nvml()
    handle = nvml.handle(device) if nvml else None
    return nvml.state(handle) if handle else None


def gpu_process_memory(device: DeviceInfo) -> dict[int, int] | None:
    """Bytes of device memory per host pid on this GPU now, or None where NVML cannot tell."""
    if device.kind != "cuda":
        return None
    nvml = _nvml()
    handle = nvml.handle(device) if nvml else None
    return nvml.process_memory(handle) if handle else None


class GpuMemoryWatch:
    """Watches the device memory a sandboxed process tree holds, from outside the sandbox.

    Polls NVML every `interval_s`; the peak is reported, and past `limit_bytes` the run is
    killed (`on_exceed`) and `exceeded` set: the judge turns that into MLE. The poll also runs on
    demand (`poll`), e.g. when another process failed to allocate.
    """

    def __init__(self, device: DeviceInfo, pids: Callable[[], list[int]],
                 limit_bytes: int | None, on_exceed: Callable[[], None],
                 interval_s: float = 0.05):
        self.device, self.pids, self.limit_bytes = device, pids, limit_bytes
        self.on_exceed, self.interval_s = on_exceed, interval_s
        self.peak_bytes = 0
        self.base_bytes = 0  # what the process held before the run's code loaded (see mark)
        self.exceeded = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @classmethod
    def start(cls, device: DeviceInfo, pids: Callable[[], list[int]], limit_bytes: int | None,
              on_exceed: Callable[[], None]) -> GpuMemoryWatch | None:
        """A running watch, or None where NVML cannot see this device's processes."""
        if gpu_process_memory(device) is None:
            return None
        watch = cls(device, pids, limit_bytes, on_exceed)
        watch._thread.start()
        return watch

    def mark(self) -> int:
        """Count from what the processes hold now: the harness's CUDA context and its own
        buffers, before any contestant code runs (else a small limit would make an empty
        submission MLE). Returns that base, in bytes."""
        usage = gpu_process_memory(self.device) or {}
        self.base_bytes = sum(usage.get(pid, 0) for pid in self.pids())
        self.peak_bytes = 0
        return self.base_bytes

    def poll(self) -> int:
        """Bytes the watched processes hold now beyond the base (and the verdict on them)."""
        usage = gpu_process_memory(self.device) or {}
        used = max(sum(usage.get(pid, 0) for pid in self.pids()) - self.base_bytes, 0)
        self.peak_bytes = max(self.peak_bytes, used)
        if self.limit_bytes is not None and used > self.limit_bytes and not self.exceeded:
            self.exceeded = True
            self.on_exceed()
        return used

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @property
    def peak_mb(self) -> float:
        return round(self.peak_bytes / 2**20, 1)
