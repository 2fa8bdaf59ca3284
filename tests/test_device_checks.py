"""Device-side checks that can be exercised without a GPU: the CUDA error check linked into cuda
submissions (here the launch fails for want of a driver, which is exactly what it must report)
and the NVML reader (against a stand-in libnvidia-ml built with gcc)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from judge.device import DeviceInfo
from judge.harness import main as harness
from judge.languages import get_language
from sandbox import SandboxLimits

ROOT = Path(__file__).parents[1]
H200 = DeviceInfo("cuda", "cuda:0", "NVIDIA H200", 60 * 2**20, "sm_90a",
                  uuid="GPU-12345678-aaaa-bbbb-cccc-1234567890ab")


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_a_failed_launch_after_run_kernel_is_a_device_error_with_the_cuda_message(default_sandbox):
    source = (ROOT / "problems/vector_add/templates/cuda.cu").read_text()
    built = get_language("cuda").compile(source, H200, default_sandbox,
                                         SandboxLimits(memory_mb=4096, pids=512), 120)
    assert built.ok, built.log
    args = [{"name": n, "role": r, "dtype": d} for n, r, d in (
        ("a", "input", "float32"), ("b", "input", "float32"), ("c", "output", "float32"),
        ("n", "scalar", "int32"))]
    call, check = harness.load_native(str(built.artifact), args)
    call(0, 0, 0, 1024)  # the launch fails: no driver here, as a bad grid fails on a GPU
    with pytest.raises(harness.DeviceError, match=r"cudaError\w+: "):
        check()


def test_a_cpp_library_without_the_device_check_still_runs(tmp_path):
    import torch

    src = tmp_path / "k.cpp"
    src.write_text('extern "C" void run_kernel(float* y, int n) { for (int i = 0; i < n; ++i) '
                   'y[i] = i; }')
    subprocess.run(["g++", "-shared", "-fPIC", "-o", tmp_path / "k.so", src], check=True)
    call, check = harness.load_native(str(tmp_path / "k.so"), [
        {"name": "y", "role": "output", "dtype": "float32"},
        {"name": "n", "role": "scalar", "dtype": "int32"}])
    y = torch.zeros(4)
    call(y, 4)
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0] and check is None


def test_the_cpu_harness_device_reports_its_flush_its_floor_and_no_l2_reset():
    device = harness.Device("cpu", 4096)
    described = device.describe()
    assert {k: described[k] for k in ("flush_bytes", "flush_read_bytes", "persisting_l2_reset")} \
        == {"flush_bytes": 4096, "flush_read_bytes": 0, "persisting_l2_reset": False}
    assert 0 < described["empty_call_ms"] < 1  # an empty call, timed as every call is


FAKE_NVML = r"""
#include <string.h>
typedef void* nvmlDevice_t;
static int token;
int nvmlInit_v2(void) { return 0; }
int nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* d) {
    if (strcmp(uuid, "GPU-12345678-aaaa-bbbb-cccc-1234567890ab")) return 13;
    *d = &token; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) { *d = &token; return i ? 2 : 0; }
int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
    *mhz = type == 1 ? 1980 : 3201; return 0; }
int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* c) { *c = 47; return 0; }
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) { *mw = 312345; return 0; }
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* r) {
    *r = 0x4 | 0x20; return 0; }
"""


def test_gpu_state_is_read_through_nvml(tmp_path, monkeypatch):
    from judge import telemetry

    (tmp_path / "nvml.c").write_text(FAKE_NVML)
    lib = tmp_path / "libnvidia-ml.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", lib, tmp_path / "nvml.c"], check=True)
    monkeypatch.setenv("KJUDGE_NVML_LIB", str(lib))
    telemetry._nvml.cache_clear()
    try:
        assert telemetry.gpu_state(H200) == {
            "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "temperature_c": 47,
            "power_w": 312.3, "throttle_reasons": ["sw_power_cap", "sw_thermal"]}
        unknown = DeviceInfo("cuda", "cuda:0", "H200", 1, uuid="GPU-0000")
        assert telemetry.gpu_state(unknown) is None
        assert telemetry.gpu_state(DeviceInfo("cpu", "cpu", "x", 1)) is None
    finally:
        telemetry._nvml.cache_clear()


def test_gpu_state_is_none_without_nvml(monkeypatch):
    from judge import telemetry

    monkeypatch.setenv("KJUDGE_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
    telemetry._nvml.cache_clear()
    try:
        assert telemetry.gpu_state(H200) is None
    finally:
        telemetry._nvml.cache_clear()


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_the_gpu_tests_cuda_sources_compile_here(default_sandbox):
    """tests/gpu runs only on a GPU: its kernels are at least built for sm_90a on every run."""
    from tests.gpu import test_gpu

    sources = [test_gpu.SPIN_CU, test_gpu.SIDE_STREAM_CU] + [
        test_gpu.VECTOR_ADD_LAUNCH.format(threads=t, body=b) for t, b, _ in test_gpu.CUDA_ERRORS]
    for source in sources:
        built = get_language("cuda").compile(source, H200, default_sandbox,
                                             SandboxLimits(memory_mb=4096, pids=512), 120)
        assert built.ok, built.log
