"""`torch`: plain PyTorch run_kernel, for baselines, references and problems that allow it."""

from __future__ import annotations

from judge.languages.base import Language, package_version


class Torch(Language):
    name = "torch"
    extensions = (".py",)
    devices = ("cpu", "cuda", "maca")
    source_name = "submission.py"
    infer_rank = 9  # any other Python source

    def host_toolchain_version(self) -> str:
        return f"torch {package_version('torch')}"

    def detects(self, source: str) -> bool:
        return True


LANGUAGE = Torch()
