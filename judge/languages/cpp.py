"""`cpp`: CPU C++ with the extern "C" run_kernel ABI, built by g++ into a shared library."""

from __future__ import annotations

from judge.host.device import DeviceInfo
from judge.languages.base import NativeLanguage
from sandbox import Sandbox


class Cpp(NativeLanguage):
    name = "cpp"
    extensions = (".cpp", ".cc", ".cxx")
    devices = ("cpu",)
    source_name = "submission.cpp"
    compiler_setting, flags_setting, default_compiler = "cxx", "cxxflags", "g++"

    def compile_command(self, source: str, output: str, device: DeviceInfo,
                        sandbox: Sandbox | None = None) -> list[str]:
        return [self.compiler_in(sandbox), *self.flags, "-shared", "-fPIC", "-o", output, source]


LANGUAGE = Cpp()
