import json
import os
import subprocess
import sys

import pytest

from judge.host import device as device_module
from judge.host.device import (
    DeviceInfo,
    DeviceUnavailable,
    cuda_arch,
    detect,
    gpu_model,
    queue_device,
)
from sandbox.process import ProcessSandbox

H200 = DeviceInfo("cuda", "cuda:3", "NVIDIA H200", 60 * 2**20, "sm_90a",
                  uuid="GPU-5c7b3c84-0d1e-4a6b-9f00-123456789abc")


def test_the_cpu_flush_is_the_same_whatever_cache_the_host_reports():
    """Machines of one kind report a 32 MiB or a 480 MiB L3: the flush, and so the verdict and
    the memory a run needs, must not follow that figure."""
    from judge.host.device import CPU_FLUSH_BYTES

    cpu = detect("cpu")
    assert cpu.kind == "cpu" and cpu.cache_bytes > 0 and cpu.flush_bytes == CPU_FLUSH_BYTES
    for l3 in (32 * 2**20, 480 * 2**20):
        assert DeviceInfo("cpu", "cpu", "x86", l3).flush_bytes == CPU_FLUSH_BYTES
    assert H200.flush_bytes == 2 * H200.cache_bytes


def test_queue_names_and_visibility():
    assert queue_device(H200) == "cuda.h200" and queue_device(detect("cpu")) == "cpu"
    assert ProcessSandbox().device_env(detect("cpu")) == ({}, "cpu")


def test_a_gpu_is_made_visible_by_uuid_not_by_its_host_index():
    """On a multi-GPU host a sandbox exposes /dev/nvidia<minor>; the minor is not the CUDA
    index, and inside the sandbox the one GPU is index 0: only the UUID names it everywhere."""
    assert ProcessSandbox().device_env(H200) == ({"CUDA_VISIBLE_DEVICES": H200.uuid}, "cuda:0")
    no_uuid = DeviceInfo("cuda", "cuda:2", "NVIDIA H200", 60 * 2**20, "sm_90a")
    assert ProcessSandbox().device_env(no_uuid) == ({"CUDA_VISIBLE_DEVICES": "2"}, "cuda:0")


@pytest.mark.parametrize("name,slug,gbps,tflops", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm", 3350.0, 989.0),
    ("NVIDIA H100 PCIe", "h100-pcie", 2000.0, 756.0),
    ("NVIDIA H100 NVL", "h100-nvl", 3900.0, 835.0),
    ("NVIDIA H200", "h200", 4800.0, 989.0),
    ("NVIDIA H200 NVL", "h200-nvl", 4800.0, 835.0),
    ("NVIDIA B200", "b200", 8000.0, 2250.0),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm", 2039.0, 312.0),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm", 1555.0, 312.0),
    ("NVIDIA A100-PCIE-40GB", "a100-pcie", 1555.0, 312.0),
    ("NVIDIA A100 80GB PCIe", "a100-pcie", 1935.0, 312.0),
    ("NVIDIA L40S", "l40s", 864.0, 362.0),
    ("NVIDIA GeForce RTX 4090", "rtx-4090", 1008.0, 165.0),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada", 960.0, 364.0),
    ("NVIDIA H100", "h100", None, None),  # the variant is not in the name: no peak guessed
    ("NVIDIA GeForce RTX 3090", "rtx-3090", None, None),
    ("MetaX C500", "c500", None, None),
])
def test_model_names_map_to_queue_slugs_and_peaks(name, slug, gbps, tflops):
    model = gpu_model(name)
    assert (model.slug, model.peak_gbps, model.peak_tflops) == (slug, gbps, tflops)
    assert "." not in model.slug  # the queue name is prefix.kind.slug


def test_cuda_arch_names():
    assert cuda_arch(9, 0) == "sm_90a" and cuda_arch(8, 0) == "sm_80"


def _probe(monkeypatch, name: str, maca: bool = False) -> None:
    gpus = [{"name": name, "major": 9, "minor": 0, "l2": 8 * 2**20, "uuid": "", "memory": 2**36}] * 2
    monkeypatch.setattr(device_module, "_gpu_probe", lambda: {"maca": maca, "devices": gpus})


def test_a_metax_card_is_detected_through_the_maca_torch_build(monkeypatch):
    """No MetaX card here: the probe answers as the MACA build of torch would on a C500."""
    _probe(monkeypatch, "MetaX C500")
    maca = detect("maca:1")
    assert (maca.kind, maca.torch_name, maca.arch, maca.flush_bytes) == (
        "maca", "cuda:1", "xcore1000", 16 * 2**20)
    assert queue_device(maca) == "maca.c500"
    assert ProcessSandbox().device_env(maca) == (
        {"CUDA_VISIBLE_DEVICES": "1", "MACA_VISIBLE_DEVICES": "1"}, "cuda:0")
    _probe(monkeypatch, "NVIDIA H200")  # an NVIDIA card is not taken for a MetaX one
    with pytest.raises(DeviceUnavailable, match="not a MetaX card"):
        detect("maca")
    monkeypatch.setenv("KJUDGE_MACA", "1")
    assert detect("maca").kind == "maca"
    _probe(monkeypatch, "MetaX C500", maca=True)  # torch.version.maca: the default device
    assert detect().kind == "maca"
    with pytest.raises(DeviceUnavailable, match="cuda:2 does not exist"):
        detect("cuda:2")


def test_no_gpu_without_a_gpu_torch_build():
    import torch

    if torch.backends.cuda.is_built():
        pytest.skip("this torch build drives GPUs")
    assert device_module._gpu_probe() == {"maca": False, "devices": []}
    with pytest.raises(DeviceUnavailable, match="MACA build of torch"):
        detect("maca")
    assert detect().kind == "cpu"


def test_the_flops_peak_follows_the_problems_precision():
    h200 = DeviceInfo("cuda", "cuda:0", "NVIDIA H200", 60 * 2**20, "sm_90a", 4800.0, 989.0)
    assert h200.peak_tflops_for("fp16") == 989.0 and h200.peak_tflops_for("int8") == 1978.0
    assert round(h200.peak_tflops_for("fp32"), 1) == 61.8
    assert detect("cpu").peak_tflops_for("fp32") is None


# Loaded at the start of every Python process of the test below (parent and children): torch
# answers as on a one-GPU H100 SXM host, and every torch.cuda call is logged with its pid.
FAKE_GPU_SITE = """
import os, types, torch
props = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0,
                              L2_cache_size=50 * 2**20, uuid="5c7b3c84-0d1e", total_memory=2**36)
answers = {"is_available": lambda: True, "device_count": lambda: 1, "init": lambda: None,
           "get_device_properties": lambda i=0: props, "current_device": lambda: 0,
           "set_device": lambda d: None, "synchronize": lambda d=None: None}
def logged(name):
    def call(*args, **kwargs):
        with open(os.environ["KJUDGE_TEST_CUDA_LOG"], "a") as log:
            log.write(f"{os.getpid()} {name}\\n")
        return answers[name](*args, **kwargs)
    return call
for name in answers:
    setattr(torch.cuda, name, logged(name))
torch.backends.cuda.is_built = lambda: True
"""

WORKER_MAIN = """
import json, os
from judge.service import worker  # what a worker process imports (judge.service.worker.main)
from judge.commands.server import queues_for
from judge.settings import settings
from judge.host.device import default_queue_device, detect
cuda = detect("cuda")
print(json.dumps({"pid": os.getpid(), "default": default_queue_device(settings()),
                  "queues": queues_for(settings(), None, None), "uuid": cuda.uuid,
                  "queue": worker.worker_app(settings()).conf.task_default_queue}))
"""


def test_a_worker_main_process_detects_its_gpu_without_initialising_cuda(tmp_path):
    """Celery's prefork pool forks children from the worker's main process; a child cannot use
    CUDA if the parent initialised it. The parent here imports the task module (which builds
    the app with the `auto` default device) and detects its GPU: not one torch.cuda call may
    happen in it — the GPU is described by a child process."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FAKE_GPU_SITE)
    log = tmp_path / "cuda-calls.log"
    env = {**os.environ, "PYTHONPATH": str(site), "KJUDGE_TEST_CUDA_LOG": str(log),
           "KJUDGE_DATA_DIR": str(tmp_path), "KJUDGE_DEFAULT_DEVICE": "auto",
           "KJUDGE_QUEUE_PREFIX": "judge"}
    env.pop("KJUDGE_WORKER_DEVICE", None)
    done = subprocess.run([sys.executable, "-c", WORKER_MAIN], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["default"] == "cuda.h100-sxm" and seen["queue"] == "judge.cuda.h100-sxm"
    assert seen["queues"] == ["judge.cuda.h100-sxm", "judge.cuda.h100-sxm.rejudge"]
    assert seen["uuid"] == "GPU-5c7b3c84-0d1e"
    callers = [line.split()[0] for line in log.read_text().splitlines()]
    assert callers, "the probe child should have asked torch.cuda"
    assert str(seen["pid"]) not in callers, "torch.cuda was called in the worker's main process"
