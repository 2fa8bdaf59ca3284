"""`cuda`: CUDA C++ with the extern "C" run_kernel ABI (device pointers), built by nvcc."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from judge.host.device import DeviceInfo
from judge.languages.base import NativeLanguage, on_host, support_source
from judge.settings import settings
from sandbox import Sandbox
from sandbox.base import DEFAULT_PATH

DEFAULT_ARCH = "sm_90a"  # used when compiling without a visible device (compile checks)
CHECK_SOURCE = "kjudge_check.cu"  # kjudge_device_check: CUDA errors after run_kernel become RE


def find_nvcc() -> str | None:
    """nvcc on the PATH, else in $CUDA_HOME/bin, else in /usr/local/cuda/bin (where CUDA images
    and installers put it without touching the PATH)."""
    found = shutil.which("nvcc")
    if found:
        return found
    homes = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    for home in filter(None, homes):
        nvcc = Path(home, "bin", "nvcc")
        if os.access(nvcc, os.X_OK):
            return str(nvcc)
    return None


def cuda_home() -> str | None:
    """The CUDA toolkit's folder (TileLang finds nvcc and CUDA's headers there)."""
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and Path(home).is_dir():
            return home
    nvcc = find_nvcc()
    if nvcc and Path(nvcc).resolve().parent.name == "bin":
        root = Path(nvcc).resolve().parent.parent
        if (root / "include" / "cuda.h").is_file():
            return str(root)
    return "/usr/local/cuda" if Path("/usr/local/cuda/include/cuda.h").is_file() else None


class Cuda(NativeLanguage):
    name = "cuda"
    extensions = (".cu",)
    devices = ("cuda",)
    source_name = "submission.cu"
    lexer = "cuda"
    compiler_setting, flags_setting, default_compiler = "nvcc", "nvcc_flags", "nvcc"
    # cuda_fp16.h, cuda_bf16.h, cuda_fp8.h; packed fp4 stays uint8_t (two values per byte)
    c_types = {"float16": "__half", "bfloat16": "__nv_bfloat16", "float8_e4m3fn": "__nv_fp8_e4m3",
               "float8_e5m2": "__nv_fp8_e5m2", "float8_e8m0fnu": "__nv_fp8_e8m0"}

    @property
    def compiler(self) -> str:
        return settings().nvcc or find_nvcc() or self.default_compiler

    def arch(self, device: DeviceInfo) -> str:
        return device.arch or settings().cuda_arch or DEFAULT_ARCH

    def runtime_env(self, device: DeviceInfo, sandbox: Sandbox | None = None) -> dict[str, str]:
        """nvcc's own folder first on PATH, where runs see the host's system (sandboxes start
        from a scrubbed PATH); an image's runs keep the image's PATH and its own CUDA."""
        if not on_host(sandbox):
            return {}
        found = shutil.which(self.compiler)
        folders = [str(Path(found).parent)] if found else []
        return {"PATH": ":".join([*folders, "/usr/local/cuda/bin", DEFAULT_PATH])}

    def support_sources(self) -> dict[str, str]:
        return {CHECK_SOURCE: support_source("cuda_check.cu")}

    def gencode(self, device: DeviceInfo) -> str:
        """The device's own machine code, spelled out: nvcc's `-arch=sm_90a` shorthand was seen
        to run a plain compute_90 pass too, which rejects wgmma and setmaxnreg."""
        arch = self.arch(device)
        return f"-gencode=arch={arch.replace('sm_', 'compute_')},code={arch}"

    def compile_command(self, source: str, output: str, device: DeviceInfo,
                        sandbox: Sandbox | None = None) -> list[str]:
        return [self.compiler_in(sandbox), *self.flags, self.gencode(device), "-shared",
                "-Xcompiler", "-fPIC", "-o", output, source, CHECK_SOURCE]


LANGUAGE = Cuda()
