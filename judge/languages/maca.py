"""`maca`: MetaX MACA C++ with the extern "C" run_kernel ABI, built by mxcc.

Configuration (environment): KJUDGE_MACA_PATH (toolkit root, default /opt/maca; its bin/ is put
on PATH), KJUDGE_MXCC (compiler, default `mxcc`), KJUDGE_MACA_ARCH (offload arch, default
xcore1000, the C500 family), KJUDGE_MXCC_FLAGS (default `-O3 -std=c++17`).
"""

from __future__ import annotations

import os

from judge.host.device import DeviceInfo
from judge.languages.base import NativeLanguage, support_source

CHECK_SOURCE = "kjudge_check.maca"  # kjudge_device_check: MACA errors after run_kernel become RE


class Maca(NativeLanguage):
    name = "maca"
    extensions = (".maca", ".mx")
    devices = ("maca",)
    source_name = "submission.maca"
    lexer = "cuda"
    compiler_env, default_compiler = "KJUDGE_MXCC", "mxcc"
    flags_env = "KJUDGE_MXCC_FLAGS"
    half_types = {"float16": "__half", "bfloat16": "__maca_bfloat16"}

    @property
    def toolkit(self) -> str:
        return os.environ.get("KJUDGE_MACA_PATH", "/opt/maca")

    def support_sources(self) -> dict[str, str]:
        return {CHECK_SOURCE: support_source("maca_check.maca")}

    def compile_command(self, source: str, output: str, device: DeviceInfo) -> list[str]:
        arch = device.arch or os.environ.get("KJUDGE_MACA_ARCH", "xcore1000")
        return [self.compiler, "-x", "maca", *self.flags, f"--offload-arch={arch}", "-shared",
                "-fPIC", "-o", output, source, CHECK_SOURCE]

    def runtime_env(self, device: DeviceInfo) -> dict[str, str]:
        return {
            "MACA_PATH": self.toolkit,
            "PATH": f"{self.toolkit}/bin:{self.toolkit}/mxgpu_llvm/bin:/usr/local/bin:/usr/bin:/bin",
            "LD_LIBRARY_PATH": f"{self.toolkit}/lib",
        }


LANGUAGE = Maca()
