"""Device-side checks that can be exercised without a GPU: the CUDA error check linked into cuda
submissions (here the launch fails for want of a driver, which is exactly what it must report)
and the NVML reader (against a stand-in libnvidia-ml built with gcc)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from judge.harness import main as harness
from judge.host.device import DeviceInfo
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


def test_a_failed_raw_runtime_call_is_cleared_and_counted():
    """A raw cudart call that fails leaves its error set for torch's next launch to report as
    the submission's: the harness clears it and says which call failed, and how often."""
    device = harness.Device("cpu", 4096)
    assert device._runtime_call("cudaCtxResetPersistingL2Cache", lambda: 0)
    assert not device._runtime_call("cudaCtxResetPersistingL2Cache", lambda: 801)
    assert not device._runtime_call("cudaDeviceSetLimit", lambda limit, size: 1, 6, 0)
    assert not device._runtime_call("cudaCtxResetPersistingL2Cache", lambda: 801)
    assert device.describe()["runtime_call_failures"] == {"cudaCtxResetPersistingL2Cache": 2,
                                                          "cudaDeviceSetLimit": 1}
    assert harness.Device("cpu", 4096).describe()["runtime_call_failures"] == {}


def test_the_cpu_harness_device_reports_its_flush_its_floor_and_no_l2_reset():
    device = harness.Device("cpu", 4096)
    described = device.describe()
    keys = ("flush_bytes", "flush_read_bytes", "persisting_l2_reset", "persisting_l2_limit_zeroed")
    assert {k: described[k] for k in keys} == {"flush_bytes": 4096, "flush_read_bytes": 0,
                                               "persisting_l2_reset": False,
                                               "persisting_l2_limit_zeroed": False}
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
#include <stdio.h>
#include <stdlib.h>
/* the SM clock from the file named by KJUDGE_FAKE_NVML_SM_CLOCK, if set (throttling) */
int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
    *mhz = type == 1 ? 1980 : 3201;
    FILE* f = type == 1 && getenv("KJUDGE_FAKE_NVML_SM_CLOCK")
        ? fopen(getenv("KJUDGE_FAKE_NVML_SM_CLOCK"), "r") : 0;
    if (f) { if (fscanf(f, "%u", mhz) != 1) *mhz = 0; fclose(f); }
    return 0; }
int nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t d, int type, unsigned* mhz) {
    *mhz = type == 1 ? 1980 : 3201; return 0; }
/* compute mode from KJUDGE_FAKE_NVML_MODE (0 DEFAULT, 3 EXCLUSIVE_PROCESS) */
int nvmlDeviceGetComputeMode(nvmlDevice_t d, int* mode) {
    *mode = getenv("KJUDGE_FAKE_NVML_MODE") ? atoi(getenv("KJUDGE_FAKE_NVML_MODE")) : 0;
    return 0; }
int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* c) { *c = 47; return 0; }
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) { *mw = 312345; return 0; }
/* the reasons from KJUDGE_FAKE_NVML_REASONS (a number), else sw_power_cap and sw_thermal */
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* r) {
    *r = getenv("KJUDGE_FAKE_NVML_REASONS") ? strtoull(getenv("KJUDGE_FAKE_NVML_REASONS"), 0, 0)
                                            : 0x4 | 0x20;
    return 0; }
/* per-process memory: "pid bytes" lines of the file named by KJUDGE_FAKE_NVML_PROCS */
#include <stdio.h>
#include <stdlib.h>
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } proc_t;
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count, proc_t* infos) {
    unsigned n = 0, pid; unsigned long long used;
    FILE* f = fopen(getenv("KJUDGE_FAKE_NVML_PROCS"), "r");
    while (f && fscanf(f, "%u %llu", &pid, &used) == 2) {
        if (n < *count) { infos[n].pid = pid; infos[n].used = used; }
        n++;
    }
    if (f) fclose(f);
    int fits = n <= *count;
    *count = n;
    return fits ? 0 : 7; }
"""


@pytest.fixture
def fake_nvml(tmp_path, monkeypatch):
    """A stand-in libnvidia-ml: fixed clocks, and the per-process memory written to a file."""
    from judge.host import telemetry

    (tmp_path / "nvml.c").write_text(FAKE_NVML)
    lib = tmp_path / "libnvidia-ml.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", lib, tmp_path / "nvml.c"], check=True)
    procs = tmp_path / "procs"
    procs.write_text("")
    monkeypatch.setenv("KJUDGE_NVML_LIB", str(lib))
    monkeypatch.setenv("KJUDGE_FAKE_NVML_PROCS", str(procs))
    telemetry._nvml.cache_clear()
    yield procs
    telemetry._nvml.cache_clear()


def test_gpu_state_is_read_through_nvml(fake_nvml):
    from judge.host import telemetry

    assert telemetry.gpu_state(H200) == {
        "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "temperature_c": 47,
        "power_w": 312.3, "throttle_reasons": ["sw_power_cap", "sw_thermal"]}
    unknown = DeviceInfo("cuda", "cuda:0", "H200", 1, uuid="GPU-0000")
    assert telemetry.gpu_state(unknown) is None
    assert telemetry.gpu_state(DeviceInfo("cpu", "cpu", "x", 1)) is None


def test_gpu_process_memory_is_read_through_nvml(fake_nvml):
    from judge.host import telemetry

    fake_nvml.write_text("".join(f"{pid} {pid * 2**20}\n" for pid in range(100, 300)))
    usage = telemetry.gpu_process_memory(H200)  # more processes than the first buffer holds
    assert len(usage) == 200 and usage[123] == 123 * 2**20
    fake_nvml.write_text(f"7 {2**64 - 1}\n8 5\n")  # NVML_VALUE_NOT_AVAILABLE is not a figure
    assert telemetry.gpu_process_memory(H200) == {8: 5}


def test_a_run_over_its_gpu_memory_limit_is_killed_and_is_mle(fake_nvml, sandbox, tmp_path):
    """The judge watches the sandboxed process tree's device memory through NVML, outside the
    sandbox: past the limit the run is killed, and its failure is MLE, also when it is the
    baseline that failed beside it."""
    import time

    from judge.host.telemetry import GpuMemoryWatch
    from judge.judging.contender import Contender, guard
    from judge.judging.context import RunFailure
    from judge.verdicts import Verdict
    from sandbox import Mount

    mount = Mount(tmp_path, "/kj/scratch", writable=True)
    proc = sandbox.spawn(["/usr/bin/sleep", "60"], mounts=[mount], cwd=mount, env={},
                                 limits=SandboxLimits(memory_mb=256))
    try:
        watch = GpuMemoryWatch.start(H200, proc.pids, 1024 * 2**20, proc.kill)
        sub = Contender("submission", proc, mount, sandbox, gpu_watch=watch)
        pids = proc.pids()
        assert pids and proc.returncode() is None
        fake_nvml.write_text("".join(f"{pid} {300 * 2**20}\n" for pid in pids) + "1 99999999999\n")
        time.sleep(0.5)
        assert proc.returncode() is None and watch.peak_mb == 300 * len(pids)  # under the limit
        fake_nvml.write_text("".join(f"{pid} {2**31}\n" for pid in pids))  # 2 GiB each
        deadline = time.monotonic() + 10
        while proc.returncode() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.returncode() is not None and watch.exceeded
        failure = sub.death("the process exited")
        assert failure.verdict is Verdict.MLE and "GPU memory limit exceeded: 1024 MiB" in \
            failure.message

        def baseline_fails():
            raise RunFailure(Verdict.RE, "CUDA out of memory")

        base = Contender("baseline", proc, mount, sandbox)
        with pytest.raises(RunFailure) as blamed:
            guard(base, baseline_fails, sub)
        assert blamed.value.verdict is Verdict.MLE
        honest = Contender("submission", proc, mount, sandbox)
        with pytest.raises(RunFailure) as judge_error:
            guard(base, baseline_fails, honest)
        assert judge_error.value.verdict is Verdict.SE
    finally:
        sub.close()


def test_the_gpu_memory_limit_counts_from_the_harness_not_its_context(fake_nvml, tmp_path):
    """The harness's CUDA context and flush buffers (~0.5 GB on an H100) are not the
    submission's: the watch counts from what the process held when its greeting came, before
    contestant code loaded, so a small limit does not make an empty submission MLE."""
    from judge.host.telemetry import GpuMemoryWatch

    killed = []
    pids = [4242]
    watch = GpuMemoryWatch(H200, lambda: pids, 256 * 2**20, lambda: killed.append(True))
    fake_nvml.write_text(f"4242 {600 * 2**20}\n")  # context and flush buffers
    assert watch.mark() == 600 * 2**20
    assert watch.poll() == 0 and not watch.exceeded and not killed
    fake_nvml.write_text(f"4242 {(600 + 200) * 2**20}\n")  # the submission's 200 MiB
    assert watch.poll() == 200 * 2**20 and watch.peak_mb == 200.0 and not killed
    fake_nvml.write_text(f"4242 {(600 + 300) * 2**20}\n")  # past its 256 MiB
    watch.poll()
    assert watch.exceeded and killed


def test_a_gpu_in_an_exclusive_compute_mode_is_not_judged_on(fake_nvml, monkeypatch, vector_add,
                                                             default_sandbox):
    """EXCLUSIVE_PROCESS admits one context; the judge and two contenders need three: the
    judging ends at once as a system error that names the fix, never as the contestant's."""
    from judge.host import telemetry
    from judge.judging.pipeline import JudgeOptions, judge_source
    from judge.verdicts import Verdict

    assert telemetry.unusable_compute_mode(H200) is None
    monkeypatch.setenv("KJUDGE_FAKE_NVML_MODE", "3")
    why = telemetry.unusable_compute_mode(H200)
    assert "EXCLUSIVE_PROCESS" in why and "-c DEFAULT" in why
    source = (ROOT / "problems/vector_add/templates/cuda.cu").read_text()
    result = judge_source(vector_add, source, language="cuda", device=H200,
                          sandbox=default_sandbox, options=JudgeOptions())
    assert result.verdict is Verdict.SE and "EXCLUSIVE_PROCESS" in result.message
    assert result.score is None or result.score == 0


def test_throttled_clocks_foreign_processes_and_a_held_gpu_are_seen_through_nvml(
        fake_nvml, tmp_path, monkeypatch):
    import os

    from judge.host import telemetry

    clock = tmp_path / "sm"
    monkeypatch.setenv("KJUDGE_FAKE_NVML_SM_CLOCK", str(clock))
    clock.write_text("1980")
    throttled = telemetry.throttle_meter(H200)
    assert throttled is not None and not throttled()
    clock.write_text("1400")  # under 75 % of the default 1980 MHz
    assert throttled()  # the reasons: power cap and heat
    monkeypatch.setenv("KJUDGE_FAKE_NVML_REASONS", "0x1")  # idle: nothing ran as it was read
    assert not throttled()
    monkeypatch.setenv("KJUDGE_FAKE_NVML_REASONS", str(0x1 | 0x8))  # idle, slowed by hardware
    assert throttled()
    monkeypatch.setenv("KJUDGE_FAKE_NVML_REASONS", "0")  # no reason given: the clock decides
    assert throttled()
    assert telemetry.throttled(1400, 1980, None) and not telemetry.throttled(1980, 1980, None)
    me = os.getpid()
    fake_nvml.write_text(f"{me} 1000\n999 2000\n")
    assert telemetry.foreign_gpu_processes(H200, {me}) == [999]
    assert telemetry.foreign_gpu_processes(H200, {12345}) is None  # another pid namespace
    assert not telemetry.await_gpu_release(H200, [999], timeout_s=0.2)
    fake_nvml.write_text(f"{me} 1000\n")
    assert telemetry.await_gpu_release(H200, [999], timeout_s=0.2)


def test_gpu_state_is_none_without_nvml(monkeypatch):
    from judge.host import telemetry

    monkeypatch.setenv("KJUDGE_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
    telemetry._nvml.cache_clear()
    try:
        assert telemetry.gpu_state(H200) is None
    finally:
        telemetry._nvml.cache_clear()


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_the_gpu_tests_cuda_sources_compile_here(default_sandbox):
    """tests/gpu runs only on a GPU: its kernels are at least built for sm_90a on every run."""
    from tests.gpu import test_gpu, test_gpu_hostile

    sources = [test_gpu.SPIN_CU, test_gpu.SIDE_STREAM_CU, test_gpu.HOG_CU] + [
        test_gpu.VECTOR_ADD_LAUNCH.format(threads=t, body=b) for t, b, _ in test_gpu.CUDA_ERRORS]
    sources += test_gpu_hostile.SOURCES
    assert all(s != test_gpu_hostile.TEMPLATE for s in test_gpu_hostile.SOURCES[1:3])
    for source in sources:
        built = get_language("cuda").compile(source, H200, default_sandbox,
                                             SandboxLimits(memory_mb=4096, pids=512), 120)
        assert built.ok, built.log
