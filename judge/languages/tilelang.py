"""`tilelang`: a Python module defining run_kernel over torch tensors with TileLang kernels.

The harness tells the source which target to compile for through KJUDGE_TILELANG_TARGET:
`c` on the CPU (elementwise kernels with local buffers), `cuda` on NVIDIA devices.
"""

from __future__ import annotations

import re

from judge.device import DeviceInfo
from judge.languages.base import Language, package_version


class TileLang(Language):
    name = "tilelang"
    extensions = (".py",)
    devices = ("cpu", "cuda", "maca")
    source_name = "submission.py"

    def toolchain_version(self) -> str:
        return f"tilelang {package_version('tilelang')}"

    def detects(self, source: str) -> bool:
        return re.search(r"^\s*(import|from)\s+tilelang\b", source, re.M) is not None

    def runtime_env(self, device: DeviceInfo) -> dict[str, str]:
        target = {"cpu": "c", "cuda": "cuda", "maca": "maca"}[device.kind]
        return {"KJUDGE_TILELANG_TARGET": target, "TILELANG_CACHE_DIR": "/tmp/tilelang-cache",
                "TVM_NUM_THREADS": "1"}


LANGUAGE = TileLang()
