"""The device a judging runs on: kind, model, cache size (for the flush), peak figures."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch

# Peak figures for the roofline fractions: (GB/s, dense fp16 TFLOP/s), by model name fragment.
KNOWN_PEAKS = {
    "H200": (4800.0, 989.0),
    "H100 SXM": (3350.0, 989.0),
    "H100": (2000.0, 756.0),
    "A100": (2039.0, 312.0),
    "L40S": (864.0, 362.0),
    "RTX 4090": (1008.0, 165.0),
}
DEFAULT_LLC_BYTES = 32 * 2**20
# Dense peaks relative to the fp16 tensor-core peak on Ampere/Hopper data-center GPUs (int8 and
# fp8 twice as fast, tf32 half, fp32 on CUDA cores about a sixteenth, fp64 tensor cores a
# fifteenth): close enough for a roofline fraction, which is a guide, not a score.
PRECISION_FACTORS = {"fp16": 1.0, "bf16": 1.0, "fp8": 2.0, "int8": 2.0, "tf32": 0.5,
                     "fp32": 1 / 16, "fp64": 1 / 15}


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # cpu | cuda | maca
    torch_name: str  # "cpu", "cuda:0"
    model: str
    cache_bytes: int  # last-level cache (CPU) or L2 (GPU)
    arch: str | None = None  # e.g. sm_90a
    peak_gbps: float | None = None
    peak_tflops: float | None = None
    uuid: str | None = None  # GPU-…, how container runtimes name one GPU

    @property
    def flush_bytes(self) -> int:
        return 2 * self.cache_bytes

    def peak_tflops_for(self, precision: str) -> float | None:
        if self.peak_tflops is None:
            return None
        return self.peak_tflops * PRECISION_FACTORS[precision]


class DeviceUnavailable(Exception):
    pass


def queue_device(device: DeviceInfo) -> str:
    """The device part of a queue name: `cpu`, or kind and model, e.g. `cuda.h200`."""
    if device.kind == "cpu":
        return "cpu"
    return f"{device.kind}.{device.model.split()[-1].lower()}"


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
        listed = os.environ.get("KJUDGE_MACA_DEVICES", "/dev/mxcd:/dev/dri").split(":")
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


def visible_device_env(device: DeviceInfo) -> tuple[dict[str, str], str]:
    """Environment that exposes only this device to a run, and its torch name inside the run."""
    kind, _, index = device.torch_name.partition(":")
    if kind != "cuda":
        return {}, device.torch_name
    env = {"CUDA_VISIBLE_DEVICES": index or "0"}
    if device.kind == "maca":  # the MACA torch build keeps torch.cuda's API and device names
        env["MACA_VISIBLE_DEVICES"] = index or "0"
    return env, "cuda:0"


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


def _detect_maca(i: int) -> DeviceInfo:
    """A MetaX GPU, seen through the MACA build of torch, which keeps the torch.cuda API.

    The card must say it is one (its name, `torch.version.maca`) or the worker is told so with
    KJUDGE_MACA=1; the offload arch comes from KJUDGE_MACA_ARCH (default xcore1000, the C500).
    """
    if not torch.cuda.is_available():
        raise DeviceUnavailable("no MACA device is visible: the MACA build of torch is not "
                                "installed here or sees no card")
    props = torch.cuda.get_device_properties(i)
    metax = (getattr(torch.version, "maca", None) or os.environ.get("KJUDGE_MACA") == "1"
             or any(n.lower() in props.name.lower() for n in MACA_NAMES))
    if not metax:
        raise DeviceUnavailable(f"device {i} is {props.name!r}, not a MetaX card (set KJUDGE_MACA=1 "
                                "if this torch build drives one)")
    arch = os.environ.get("KJUDGE_MACA_ARCH", "xcore1000")
    l2 = getattr(props, "L2_cache_size", 0) or DEFAULT_LLC_BYTES
    return DeviceInfo("maca", f"cuda:{i}", props.name, l2, arch)  # torch's name for it


def detect(requested: str | None = None) -> DeviceInfo:
    """The requested device ('cpu', 'cuda', 'cuda:1'), or the GPU when one is visible."""
    if requested is None:
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    kind, _, index = requested.partition(":")
    if kind == "cpu":
        return DeviceInfo("cpu", "cpu", cpu_model(), cpu_llc_bytes())
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailable("no CUDA device is visible on this machine")
        i = int(index or 0)
        props = torch.cuda.get_device_properties(i)
        peaks = next((v for k, v in KNOWN_PEAKS.items() if k in props.name), (None, None))
        arch = os.environ.get("KJUDGE_CUDA_ARCH") or cuda_arch(props.major, props.minor)
        uuid = getattr(props, "uuid", None)
        return DeviceInfo("cuda", f"cuda:{i}", props.name, props.L2_cache_size, arch, *peaks,
                          uuid=f"GPU-{uuid}" if uuid else None)
    if kind == "maca":
        return _detect_maca(int(index or 0))
    raise DeviceUnavailable(f"unknown device {requested!r}; use cpu, cuda or cuda:N")
