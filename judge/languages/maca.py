"""`maca`: MetaX MACA C++ with the extern "C" run_kernel ABI, built by mxcc (its toolkit,
compiler, flags and arch: judge/settings.py)."""

from __future__ import annotations

from judge.host.device import DeviceInfo
from judge.languages.base import NativeLanguage, support_source
from judge.settings import settings
from sandbox import Sandbox

DEFAULT_ARCH = "xcore1000"  # the C500 family, where the device does not say
CHECK_SOURCE = "kjudge_check.maca"  # kjudge_device_check: MACA errors after run_kernel become RE


class Maca(NativeLanguage):
    name = "maca"
    extensions = (".maca", ".mx")
    devices = ("maca",)
    source_name = "submission.maca"
    lexer = "cuda"
    compiler_setting, flags_setting, default_compiler = "mxcc", "mxcc_flags", "mxcc"
    c_types = {"float16": "__half", "bfloat16": "__maca_bfloat16"}

    @property
    def toolkit(self) -> str:
        return settings().maca_path

    def support_sources(self) -> dict[str, str]:
        return {CHECK_SOURCE: support_source("maca_check.maca")}

    def compile_command(self, source: str, output: str, device: DeviceInfo,
                        sandbox: Sandbox | None = None) -> list[str]:
        arch = device.arch or settings().maca_arch or DEFAULT_ARCH
        return [self.compiler_in(sandbox), "-x", "maca", *self.flags, f"--offload-arch={arch}", "-shared",
                "-fPIC", "-o", output, source, CHECK_SOURCE]

    def runtime_env(self, device: DeviceInfo, sandbox: Sandbox | None = None) -> dict[str, str]:
        return {
            "MACA_PATH": self.toolkit,
            "PATH": f"{self.toolkit}/bin:{self.toolkit}/mxgpu_llvm/bin:/usr/local/bin:/usr/bin:/bin",
            "LD_LIBRARY_PATH": f"{self.toolkit}/lib",
        }


LANGUAGE = Maca()
