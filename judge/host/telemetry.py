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
import time
from collections.abc import Callable
from functools import cache

from judge.host.device import DeviceInfo
from judge.settings import settings

NVML_SUCCESS = 0
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_VALUE_NOT_AVAILABLE = 2**64 - 1
CLOCK_SM, CLOCK_MEM = 1, 2
TEMPERATURE_GPU = 0
# nvmlComputeMode_t: the judge and two contenders each hold a context on the GPU, so only the
# default mode works (EXCLUSIVE_PROCESS admits one process, PROHIBITED none)
COMPUTE_MODES = {0: "DEFAULT", 1: "EXCLUSIVE_THREAD", 2: "PROHIBITED", 3: "EXCLUSIVE_PROCESS"}
# a timed call whose SM clock was below this fraction of the default is discarded and redone
# (NVBench's throttle threshold)
THROTTLE_FRACTION = 0.75
THROTTLE_REASONS = {
    0x1: "idle", 0x2: "application_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
    0x100: "display_clocks",
}
# the reasons that slow a busy card (power and heat); "idle" lowers the clock of a card with
# nothing to run, which a read right after a light batch of tiny kernels may catch
SLOWING_REASONS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
IDLE_REASON = 0x1


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

    def compute_mode(self, handle) -> str | None:
        mode = ctypes.c_int()
        fn = getattr(self.lib, "nvmlDeviceGetComputeMode", None)
        if fn is None or fn(handle, ctypes.byref(mode)) != NVML_SUCCESS:
            return None
        return COMPUTE_MODES.get(mode.value, str(mode.value))

    def default_sm_clock(self, handle) -> int | None:
        """The SM clock the card runs at by default (its application clock), else its most."""
        return (self._uint("nvmlDeviceGetDefaultApplicationsClock", handle, CLOCK_SM)
                or self._uint("nvmlDeviceGetMaxClockInfo", handle, CLOCK_SM))

    def sm_clock(self, handle) -> int | None:
        return self._uint("nvmlDeviceGetClockInfo", handle, CLOCK_SM)

    def clock_reasons(self, handle) -> int | None:
        """Why the clocks are below their most now (THROTTLE_REASONS' bits), None if unread."""
        reasons = ctypes.c_ulonglong()
        fn = getattr(self.lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        if fn is None or fn(handle, ctypes.byref(reasons)) != NVML_SUCCESS:
            return None
        return reasons.value

    def state(self, handle) -> dict:
        reasons = self.clock_reasons(handle)
        throttled = None if reasons is None else [
            name for bit, name in THROTTLE_REASONS.items() if reasons & bit]
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


def _handle(device: DeviceInfo):
    if device.kind != "cuda":
        return None, None
    nvml = _nvml()
    handle = nvml.handle(device) if nvml else None
    return (nvml, handle) if handle else (None, None)


def gpu_compute_mode(device: DeviceInfo) -> str | None:
    """The GPU's compute mode (DEFAULT, EXCLUSIVE_PROCESS, ...), or None where unreadable."""
    nvml, handle = _handle(device)
    return nvml.compute_mode(handle) if nvml else None


def unusable_compute_mode(device: DeviceInfo) -> str | None:
    """Why this GPU cannot be judged on as it is set (None: it can, or NVML cannot tell)."""
    mode = gpu_compute_mode(device)
    if mode is None or mode == "DEFAULT":
        return None
    return (f"the GPU's compute mode is {mode}: the judge and both contenders each need a "
            "context on it (set it back with `nvidia-smi -i <gpu> -c DEFAULT`)")


def throttle_meter(device: DeviceInfo) -> Callable[[], bool] | None:
    """A check to make right after a timed call: whether the card was throttled (`throttled`).
    None where NVML cannot read the clocks."""
    nvml, handle = _handle(device)
    default = nvml.default_sm_clock(handle) if nvml else None
    if not default:
        return None
    return lambda: throttled(nvml.sm_clock(handle), default, nvml.clock_reasons(handle))


def throttled(clock: int | None, default: int, reasons: int | None) -> bool:
    """Whether an SM clock read means a throttled card: under THROTTLE_FRACTION of its
    `default` (a hot or power-capped card: the sample is not the kernel's), unless NVML's
    reasons say the card was only idle (no power or heat reason beside it): a read right after
    a batch of tiny kernels may find it idling, and discarding that round would discard every
    round of a light point. Reasons unread: the clock alone decides."""
    if clock is None or clock >= THROTTLE_FRACTION * default:
        return False
    if reasons is None:
        return True
    return bool(reasons & SLOWING_REASONS) or not reasons & IDLE_REASON


def foreign_gpu_processes(device: DeviceInfo, own: set[int]) -> list[int] | None:
    """Processes with a context on the GPU that are not the judge's (`own`: its pid and the
    contenders'); None where NVML cannot tell (no list, or none of ours in it: the pids are
    another namespace's)."""
    usage = gpu_process_memory(device)
    if not usage or not set(usage) & own:
        return None
    return sorted(set(usage) - own)


def await_gpu_release(device: DeviceInfo, pids: list[int], timeout_s: float = 10.0) -> bool:
    """After a run was killed (a hung kernel, a crash): wait until none of its processes holds
    the GPU any more; False if one still did after `timeout_s` (the next timing would share
    the card with it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        usage = gpu_process_memory(device)
        if usage is None or not set(usage) & set(pids):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


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
