"""`triton`: a Python module defining run_kernel over torch tensors with Triton kernels.

On the CPU the harness runs Triton through its interpreter (TRITON_INTERPRET=1).
"""

from __future__ import annotations

from judge.host.device import DeviceInfo
from judge.languages.base import Language, package_version
from sandbox import Sandbox


class Triton(Language):
    name = "triton"
    extensions = (".py",)
    devices = ("cpu", "cuda", "maca")
    source_name = "submission.py"
    packages = ("triton",)
    infer_rank = 1
    jit_devices = ("cuda", "maca")
    jit_cache_env = ("TRITON_CACHE_DIR",)

    def host_toolchain_version(self) -> str:
        return f"triton {package_version('triton')}"

    def runtime_env(self, device: DeviceInfo, sandbox: Sandbox | None = None) -> dict[str, str]:
        env = {"TRITON_CACHE_DIR": "/tmp/triton-cache"}
        if device.kind == "cpu":
            env["TRITON_INTERPRET"] = "1"
        return env


LANGUAGE = Triton()
