"""The harness's GPU timing against a model of a GPU's timeline (no GPU here).

The model has the two things that decide what a CUDA event measures: the host, which runs ahead
and waits only when it synchronizes, and streams, whose work and events queue in order. It checks
what tests/gpu can only check on a device: that no host round trip is measured, that work left on
another stream is still charged, and that the device check runs outside the timed region.
"""

from __future__ import annotations

import random

import pytest

from judge.harness import main as harness

LAUNCH_MS = 0.004  # host cost of one launch or event record
WAKE_MS = (0.008, 0.014)  # a synchronizing host wakes up this much after the device is done


class Timeline:
    def __init__(self, seed: int = 1):
        self.host = 0.0
        self.tails = {"main": 0.0, "side": 0.0}
        self.random = random.Random(seed)

    def launch(self, ms: float, stream: str = "main") -> None:
        self.tails[stream] = max(self.host, self.tails[stream]) + ms
        self.host += LAUNCH_MS

    def wait_until(self, t: float) -> None:
        self.host = max(self.host, t) + self.random.uniform(*WAKE_MS)

    def synchronize(self) -> None:
        self.wait_until(max(self.tails.values()))

    def event(self, enable_timing: bool = True) -> Event:
        return Event(self)


class Event:
    def __init__(self, timeline: Timeline):
        self.timeline = timeline
        self.at = None

    def record(self) -> None:
        line = self.timeline
        line.tails["main"] = self.at = max(line.host, line.tails["main"])
        line.host += LAUNCH_MS

    def synchronize(self) -> None:
        self.timeline.wait_until(self.at)

    def elapsed_time(self, other: Event) -> float:
        return other.at - self.at


@pytest.fixture
def gpu():
    """A harness Device whose CUDA calls go to the model, calibrated as on a real GPU."""
    device = harness.Device("cpu", 64)
    line = Timeline()
    device.is_cuda, device._sync, device._event = True, line.synchronize, line.event
    device.calibrate()
    return device, line


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def test_a_kernel_is_measured_without_the_host_round_trip(gpu):
    device, line = gpu
    ms = median([device.time_call(lambda: line.launch(0.050)) for _ in range(41)])
    # the launch itself is in (the device waits for it), a sync before the end event is not
    assert ms == pytest.approx(0.050 + LAUNCH_MS, abs=0.001)
    assert device.empty_call_ms == pytest.approx(0.0, abs=LAUNCH_MS + 1e-9)


def test_work_left_on_another_stream_is_charged(gpu):
    device, line = gpu
    ms = median([device.time_call(lambda: line.launch(0.200, "side")) for _ in range(41)])
    assert ms >= 0.195


def test_the_device_check_is_outside_the_timed_region(gpu):
    device, line = gpu
    checks = []

    def check():  # cudaGetLastError + cudaDeviceSynchronize through ctypes: host time
        checks.append(1)
        line.host += 0.030

    ms = median([device.time_call(lambda: line.launch(0.050), check) for _ in range(41)])
    assert ms == pytest.approx(0.050 + LAUNCH_MS, abs=0.001) and len(checks) == 41


def test_an_error_found_while_settling_is_named_by_the_submissions_runtime(gpu):
    device, line = gpu

    def failing_sync():
        if line.tails["main"] > line.host:  # the faulting kernel is behind this sync
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    def check(synchronize=False):
        raise harness.DeviceError("device error after run_kernel returned: "
                                  "cudaErrorIllegalAddress: an illegal memory access")

    device._sync = failing_sync
    with pytest.raises(harness.DeviceError, match="cudaErrorIllegalAddress"):
        device.time_call(lambda: line.launch(0.050), check)
