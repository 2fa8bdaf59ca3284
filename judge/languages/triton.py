"""`triton`: a Python module defining run_kernel over torch tensors with Triton kernels.

On the CPU the harness runs Triton through its interpreter (TRITON_INTERPRET=1).
"""

from __future__ import annotations

from judge.host.device import DeviceInfo
from judge.languages.base import PythonKernelLanguage
from sandbox import Sandbox


class Triton(PythonKernelLanguage):
    name = "triton"
    packages = ("triton",)
    infer_rank = 1
    jit_cache_env = ("TRITON_CACHE_DIR",)
    kernel_decorators = ("jit", "autotune", "heuristics")
    starter_imports = "import triton\nimport triton.language as tl\n"

    def runtime_env(self, device: DeviceInfo, sandbox: Sandbox | None = None) -> dict[str, str]:
        env = {"TRITON_CACHE_DIR": "/tmp/triton-cache"}
        if device.kind == "cpu":
            env["TRITON_INTERPRET"] = "1"
        return env


LANGUAGE = Triton()
