"""The device a judging runs on: kind, model, cache size (for the flush), peak figures.

Detection never initialises CUDA in the calling process: a Celery worker detects its device in
the main process and then forks its pool, and a forked child cannot use a CUDA runtime its parent
initialised ("Cannot re-initialize CUDA in forked subprocess"). GPUs are described by a probe run
in a child process (`_gpu_probe`), once per process.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from judge.settings import Settings, settings


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as torch names it: its queue slug and dense peak figures (None: not known)."""

    slug: str
    pattern: str  # regular expression over torch's device name, case-insensitive
    peak_gbps: float | None = None
    peak_tflops: float | None = None  # dense fp16 tensor cores, fp32 accumulate


# First match wins: variants before the plain name. Peaks are the vendors' datasheet figures
# without sparsity; torch's names are e.g. "NVIDIA H100 80GB HBM3" (SXM), "NVIDIA H100 PCIe",
# "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA GeForce RTX 4090".
GPU_MODELS = (
    GpuModel("h200-nvl", r"\bH200\b.*\bNVL\b", 4800.0, 835.0),
    GpuModel("gh200", r"\bGH200\b"),
    GpuModel("h200", r"\bH200\b", 4800.0, 989.0),
    GpuModel("h100-nvl", r"\bH100\b.*\bNVL\b", 3900.0, 835.0),
    GpuModel("h100-pcie", r"\bH100\b.*\bPCIe\b", 2000.0, 756.0),
    GpuModel("h100-sxm", r"\bH100\b.*(\bSXM|\bHBM3\b)", 3350.0, 989.0),
    GpuModel("h100", r"\bH100\b"),  # a variant torch's name does not tell: no peaks guessed
    GpuModel("b200", r"\bB200\b", 8000.0, 2250.0),
    GpuModel("a100-sxm", r"\bA100\b.*\bSXM.*\b40GB\b", 1555.0, 312.0),
    GpuModel("a100-sxm", r"\bA100\b.*\bSXM", 2039.0, 312.0),
    GpuModel("a100-pcie", r"\bA100\b.*(\bPCIe\b.*\b40GB\b|\b40GB\b.*\bPCIe\b)", 1555.0, 312.0),
    GpuModel("a100-pcie", r"\bA100\b.*\bPCIe\b", 1935.0, 312.0),
    GpuModel("a100", r"\bA100\b"),
    GpuModel("l40s", r"\bL40S\b", 864.0, 362.0),
    GpuModel("rtx-6000-ada", r"\bRTX 6000 Ada\b", 960.0, 364.0),
    GpuModel("rtx-5090", r"\bRTX 5090\b", 1792.0, 209.5),
    GpuModel("rtx-4090", r"\bRTX 4090\b", 1008.0, 165.0),
)
VENDOR_WORDS = {"nvidia", "geforce", "tesla", "metax", "corporation"}
DEFAULT_LLC_BYTES = 32 * 2**20
# The CPU flush evicts a kernel's working set from the private caches (L1 + L2: at most 2 MiB
# a core on current server CPUs), and is the same on every host: sizing it from the shared L3 a
# VM reports (32 MiB on one machine of ours, 480 MiB on another) made the verdict and the time
# depend on the machine, and a 960 MiB write before every call measured the cold TLB, not the
# kernel. The L3 a kernel shares with the baseline is the same for both (they alternate).
CPU_FLUSH_BYTES = 8 * 2**20
# Dense peaks relative to the fp16 tensor-core peak on Ampere/Hopper data-center GPUs (int8 and
# fp8 twice as fast, tf32 half, fp32 on CUDA cores about a sixteenth, fp64 tensor cores a
# fifteenth): close enough for a roofline fraction, which is a guide, not a score.
PRECISION_FACTORS = {"fp16": 1.0, "bf16": 1.0, "fp8": 2.0, "int8": 2.0, "tf32": 0.5,
                     "fp32": 1 / 16, "fp64": 1 / 15}


def gpu_model(name: str) -> GpuModel:
    """The table entry for a device name, or one with a slug made from the name and no peaks."""
    for model in GPU_MODELS:
        if re.search(model.pattern, name, re.I):
            return model
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower())
             if w and w not in VENDOR_WORDS and not re.fullmatch(r"\d+gb", w)]
    return GpuModel("-".join(words) or "gpu", "")


# the kinds of device a judge runs on: the CPU, NVIDIA GPUs (torch's cuda), MetaX GPUs (whose
# torch build keeps torch.cuda's names)
DEVICE_KINDS = ("cpu", "cuda", "maca")


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # one of DEVICE_KINDS
    torch_name: str  # "cpu", "cuda:0"
    model: str
    cache_bytes: int  # last-level cache (CPU, reported only) or L2 (GPU)
    arch: str | None = None  # e.g. sm_90a
    peak_gbps: float | None = None
    peak_tflops: float | None = None
    uuid: str | None = None  # GPU-…, how CUDA_VISIBLE_DEVICES and container runtimes name one GPU
    memory_bytes: int | None = None  # the device's own memory (GPUs)

    @property
    def flush_bytes(self) -> int:
        return CPU_FLUSH_BYTES if self.kind == "cpu" else 2 * self.cache_bytes

    def peak_tflops_for(self, precision: str) -> float | None:
        if self.peak_tflops is None:
            return None
        return self.peak_tflops * PRECISION_FACTORS[precision]


class DeviceUnavailable(Exception):
    pass


def queue_device(device: DeviceInfo) -> str:
    """The device part of a queue name: `cpu`, or kind and model, e.g. `cuda.h100-sxm`."""
    if device.kind == "cpu":
        return "cpu"
    return f"{device.kind}.{gpu_model(device.model).slug}"


def device_nodes(device: DeviceInfo) -> list[str]:
    """Device files a sandboxed run needs for this device (none for the CPU).

    NVIDIA: the control nodes and every /dev/nvidiaN; the run sees one GPU through
    CUDA_VISIBLE_DEVICES. MACA: the nodes listed in KJUDGE_MACA_DEVICES (default /dev/mxcd,
    /dev/dri).
    """
    if device.kind == "cuda":
        nodes = sorted(str(p) for p in Path("/dev").glob("nvidia*"))
        minor = _nvidia_minor(device)
        if minor is None:
            return nodes  # unknown mapping: CUDA_VISIBLE_DEVICES alone narrows it down
        per_gpu = re.compile(r"^/dev/nvidia\d+$")
        return [n for n in nodes if not per_gpu.match(n) or n == f"/dev/nvidia{minor}"]
    if device.kind == "maca":
        listed = settings().maca_devices.split(":")
        return [p for p in listed if p and Path(p).exists()]
    return []


def _nvidia_minor(device: DeviceInfo) -> int | None:
    """The /dev/nvidiaN minor of this GPU, from the driver's per-GPU information files."""
    if not device.uuid:
        return None
    for info in Path("/proc/driver/nvidia/gpus").glob("*/information"):
        try:
            text = info.read_text()
        except OSError:
            continue
        if device.uuid.removeprefix("GPU-").lower() in text.lower():
            match = re.search(r"Device Minor:\s*(\d+)", text)
            return int(match.group(1)) if match else None
    return None


def cpu_llc_bytes() -> int:
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        best = max(best, int(text.rstrip("KMG")) * unit)
    return best or DEFAULT_LLC_BYTES


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"


def cuda_arch(major: int, minor: int) -> str:
    """nvcc architecture: the 'a' variants unlock wgmma/TMA on Hopper and Blackwell."""
    suffix = "a" if major in (9, 10, 12) else ""
    return f"sm_{major}{minor}{suffix}"


MACA_NAMES = ("MetaX", "MXC", "C500", "C550", "C600")
# Run in a child process: describes the GPUs torch sees without initialising CUDA in the caller.
GPU_PROBE = r"""
import json, torch
found = {"maca": getattr(torch.version, "maca", None) is not None, "devices": []}
if torch.cuda.is_available():
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        found["devices"].append({"name": p.name, "major": p.major, "minor": p.minor,
                                 "l2": getattr(p, "L2_cache_size", 0) or 0,
                                 "uuid": str(getattr(p, "uuid", "") or ""),
                                 "memory": p.total_memory})
print(json.dumps(found))
"""


def _cpu_only_torch() -> bool:
    """Whether the installed torch is a CPU-only build, read from its version file without
    importing it (~2 s and ~300 MB: an API process that only routes judgings never needs it);
    asked of torch itself where this process has it loaded already."""
    loaded = sys.modules.get("torch")
    if loaded is not None:
        return not loaded.backends.cuda.is_built()
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return True
    try:
        text = Path(spec.origin).with_name("version.py").read_text()
    except OSError:
        return False  # unknown: ask torch itself
    accelerators = re.findall(r"^(cuda|hip|rocm|xpu|maca)\b[^=\n]*=\s*(.+)$", text, re.M)
    return bool(accelerators) and all(value.strip() == "None" for _, value in accelerators)


@cache
def _gpu_probe() -> dict:
    """The GPUs torch sees, from a child process (a CPU-only torch build sees none)."""
    if _cpu_only_torch():
        return {"maca": False, "devices": []}
    try:
        done = subprocess.run([sys.executable, "-c", GPU_PROBE], capture_output=True, text=True,
                              timeout=300)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"maca": False, "devices": [], "error": f"the GPU probe failed: {exc}"}
    except (ValueError, IndexError):
        return {"maca": False, "devices": [], "error": f"the GPU probe failed: {done.stderr[-800:]}"}


def _gpu(kind: str, index: int) -> dict:
    probe = _gpu_probe()
    gpus = probe["devices"]
    if not gpus:
        why = probe.get("error") or ("the MACA build of torch is not installed here or sees no "
                                     "card" if kind == "maca" else "")
        raise DeviceUnavailable(f"no {kind.upper()} device is visible on this machine"
                                + (f": {why}" if why else ""))
    if index >= len(gpus):
        raise DeviceUnavailable(f"{kind}:{index} does not exist; this machine has {len(gpus)}")
    return gpus[index]


def _detect_maca(i: int) -> DeviceInfo:
    """A MetaX GPU, seen through the MACA build of torch, which keeps the torch.cuda API.

    The card must say it is one (its name, `torch.version.maca`) or the worker is told so with
    KJUDGE_MACA=1; the offload arch comes from KJUDGE_MACA_ARCH (default xcore1000, the C500).
    """
    gpu = _gpu("maca", i)
    metax = (_gpu_probe()["maca"] or settings().maca
             or any(n.lower() in gpu["name"].lower() for n in MACA_NAMES))
    if not metax:
        raise DeviceUnavailable(f"device {i} is {gpu['name']!r}, not a MetaX card (set "
                                "KJUDGE_MACA=1 if this torch build drives one)")
    arch = settings().maca_arch or "xcore1000"
    return DeviceInfo("maca", f"cuda:{i}", gpu["name"], gpu["l2"] or DEFAULT_LLC_BYTES, arch,
                      memory_bytes=gpu["memory"])  # torch's name for it


def _detect_cuda(i: int) -> DeviceInfo:
    gpu = _gpu("cuda", i)
    model = gpu_model(gpu["name"])
    arch = settings().cuda_arch or cuda_arch(gpu["major"], gpu["minor"])
    uuid = gpu["uuid"].removeprefix("GPU-")
    return DeviceInfo("cuda", f"cuda:{i}", gpu["name"], gpu["l2"], arch, model.peak_gbps,
                      model.peak_tflops, uuid=f"GPU-{uuid}" if uuid else None,
                      memory_bytes=gpu["memory"])


def detect(requested: str | None = None) -> DeviceInfo:
    """The requested device ('cpu', 'cuda', 'cuda:1', 'maca'), or the GPU when one is visible."""
    if requested is None:
        probe = _gpu_probe()
        requested = ("maca" if probe["maca"] else "cuda") if probe["devices"] else "cpu"
    kind, _, index = requested.partition(":")
    if kind == "cpu":
        return DeviceInfo("cpu", "cpu", cpu_model(), cpu_llc_bytes())
    if kind == "cuda":
        return _detect_cuda(int(index or 0))
    if kind == "maca":
        return _detect_maca(int(index or 0))
    raise DeviceUnavailable(f"unknown device {requested!r}; use cpu, cuda or cuda:N")


def default_queue_device(config: Settings) -> str:
    """The device part of the queue of submissions outside a contest (cpu, cuda.h100, …):
    the `default_device` setting, `auto` resolved to this host's."""
    return _auto_queue_device() if config.default_device == "auto" else config.default_device


@cache
def _auto_queue_device() -> str:
    """This host's queue device, detected once per process by a child process (no parent that
    forks workers initialises CUDA)."""
    return queue_device(detect())
