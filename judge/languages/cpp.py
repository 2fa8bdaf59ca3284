"""`cpp`: CPU C++ with the extern "C" run_kernel ABI, built by g++ into a shared library."""

from __future__ import annotations

import os
import shlex

from judge.host.device import DeviceInfo
from judge.languages.base import Language, tool_version


class Cpp(Language):
    name = "cpp"
    extensions = (".cpp", ".cc", ".cxx")
    loader = "native"
    devices = ("cpu",)
    source_name = "submission.cpp"

    @property
    def compiler(self) -> str:
        return os.environ.get("KJUDGE_CXX", "g++")

    def toolchain_version(self) -> str:
        return tool_version((self.compiler, "--version"))

    def compile_command(self, source: str, output: str, device: DeviceInfo) -> list[str]:
        flags = shlex.split(os.environ.get("KJUDGE_CXXFLAGS", "-O3 -march=native -std=c++17"))
        return [self.compiler, *flags, "-shared", "-fPIC", "-o", output, source]


LANGUAGE = Cpp()
