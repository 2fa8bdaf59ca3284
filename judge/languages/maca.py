"""`maca`: MetaX MACA C++ with the extern "C" run_kernel ABI, built by mxcc.

Configuration (environment): KJUDGE_MACA_PATH (toolkit root, default /opt/maca; its bin/ is put
on PATH), KJUDGE_MXCC (compiler, default `mxcc`), KJUDGE_MACA_ARCH (offload arch, default
xcore1000, the C500 family), KJUDGE_MXCC_FLAGS (default `-O3 -std=c++17`).
"""

from __future__ import annotations

import os
import shlex

from judge.host.device import DeviceInfo
from judge.languages.base import Language, support_source, tool_version

CHECK_SOURCE = "kjudge_check.maca"  # kjudge_device_check: MACA errors after run_kernel become RE


class Maca(Language):
    name = "maca"
    extensions = (".maca", ".mx")
    loader = "native"
    devices = ("maca",)
    source_name = "submission.maca"

    @property
    def toolkit(self) -> str:
        return os.environ.get("KJUDGE_MACA_PATH", "/opt/maca")

    @property
    def compiler(self) -> str:
        return os.environ.get("KJUDGE_MXCC", "mxcc")

    def toolchain_version(self) -> str:
        return tool_version((self.compiler, "--version"))

    def support_sources(self) -> dict[str, str]:
        return {CHECK_SOURCE: support_source("maca_check.maca")}

    def compile_command(self, source: str, output: str, device: DeviceInfo) -> list[str]:
        flags = shlex.split(os.environ.get("KJUDGE_MXCC_FLAGS", "-O3 -std=c++17"))
        arch = device.arch or os.environ.get("KJUDGE_MACA_ARCH", "xcore1000")
        return [self.compiler, "-x", "maca", *flags, f"--offload-arch={arch}", "-shared",
                "-fPIC", "-o", output, source, CHECK_SOURCE]

    def runtime_env(self, device: DeviceInfo) -> dict[str, str]:
        return {
            "MACA_PATH": self.toolkit,
            "PATH": f"{self.toolkit}/bin:{self.toolkit}/mxgpu_llvm/bin:/usr/local/bin:/usr/bin:/bin",
            "LD_LIBRARY_PATH": f"{self.toolkit}/lib",
        }


LANGUAGE = Maca()
