"""The interface every language module implements, and the cached, sandboxed compile step.

A language says which file name the source gets, how the harness loads the artifact
(`native`: a shared library with extern "C" run_kernel; `python`: a module defining run_kernel),
the compiler command (run in the sandbox), and the environment the harness needs at run time.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from judge import signature
from judge.host.device import DeviceInfo
from judge.settings import settings
from judge.signature import Arg
from sandbox import Mount, Sandbox, SandboxLimits

BUILD_DIR = "/kj/build"
MAX_LOG = 16 * 1024


def on_host(sandbox: Sandbox | None) -> bool:
    """Whether a compile or run in `sandbox` sees the host's toolchains (None: a host one);
    else an image's own, found on its PATH."""
    return sandbox is None or sandbox.host_system


def cache_root() -> Path:
    return settings().cache_dir / "compile"


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    artifact: Path | None
    log: str
    seconds: float
    cached: bool = False
    timed_out: bool = False


class Language:
    """A language's facts and its compile step. Subclasses set the class attributes; a language
    is one module of this package that defines `LANGUAGE` (the registry finds it)."""

    name: str = ""
    extensions: tuple[str, ...] = ()
    loader: str = "python"  # or "native"
    devices: tuple[str, ...] = ()  # device kinds it runs on (judge/host/device.py DEVICE_KINDS)
    source_name: str = "submission.py"
    lexer: str = "python"  # Pygments' name, for the source as the web page shows it
    # Python packages its runtime brings, the one its kernels are decorated from first
    # (`triton.jit`): the harness reports their versions and does not count their operators
    # against a rule; the image check looks for them
    packages: tuple[str, ...] = ()
    # .py sources are told apart by their imports: the lowest rank whose `detects` holds wins
    infer_rank: int = 0
    # devices on which it compiles at the first call of each new shape (Triton on GPUs, TileLang)
    jit_devices: tuple[str, ...] = ()
    # environment variables that name its JIT's on-disk cache (judge/judging/jit_cache.py keeps
    # one per source, toolchain and device)
    jit_cache_env: tuple[str, ...] = ()
    # decorators of its package (`packages[0]`, as imported) that mark a kernel: a problem's
    # allow-list of PyTorch calls does not look inside one (its calls are the DSL's)
    kernel_decorators: tuple[str, ...] = ()
    # what an imported problem's starter template in this language imports ("": no starter;
    # judge/problem/importers/draft.py)
    starter_imports: str = ""

    @property
    def is_python(self) -> bool:
        return self.loader == "python"

    def declaration(self, args: Sequence[Arg]) -> str:
        """run_kernel's declaration in this language, for statements and templates."""
        return signature.python_declaration(args)

    def toolchain_version(self, sandbox: Sandbox | None = None) -> str:
        """The toolchain a run in `sandbox` uses: the host's (its version), or an image's (the
        image, pinned by its id: its tools are not the host's, whatever the host has)."""
        if sandbox is not None and sandbox.system_id:
            return f"the image's: {sandbox.system_id[:19]}"
        return self.host_toolchain_version()

    def host_toolchain_version(self) -> str:
        return "python"

    def compile_command(self, source: str, output: str, device: DeviceInfo,
                        sandbox: Sandbox | None = None) -> list[str] | None:
        """The compiler command line, or None when there is nothing to compile."""
        return None

    def runtime_env(self, device: DeviceInfo, sandbox: Sandbox | None = None) -> dict[str, str]:
        """What compiles and runs need in their environment, in `sandbox` (None: one that sees
        the host's system). A PATH given here is put before the run's own."""
        return {}

    def support_sources(self) -> dict[str, str]:
        """Trusted sources compiled into the artifact beside the submission: file name -> text."""
        return {}

    def detects(self, source: str) -> bool:
        """Whether a .py source is meant for this language: it imports the language's package."""
        return any(re.search(rf"^\s*(import|from)\s+{name}\b", source, re.M)
                   for name in self.packages[:1])

    def check_source(self, source: str) -> str | None:
        """Static checks before compiling; a message means CE."""
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            return f"{self.source_name}:{exc.lineno}: SyntaxError: {exc.msg}"
        except (ValueError, RecursionError) as exc:
            return f"{self.source_name}: cannot be parsed: {exc}"
        if not any(_binds(node, "run_kernel") for node in tree.body):
            return f"{self.source_name}: run_kernel is not defined at module level"
        return None

    def cache_key(self, source: str, device: DeviceInfo, sandbox: Sandbox | None = None) -> str:
        command = self.compile_command(self.source_name, "artifact", device, sandbox)
        material = json.dumps([self.name, self.toolchain_version(sandbox), command, source,
                               self.support_sources()])
        return hashlib.sha256(material.encode()).hexdigest()[:24]

    def compile(self, source: str, device: DeviceInfo, sandbox: Sandbox,
                limits: SandboxLimits, timeout_s: float) -> CompileResult:
        started = time.monotonic()
        problem = self.check_source(source)
        if problem:
            return CompileResult(False, None, problem, time.monotonic() - started)
        key = self.cache_key(source, device, sandbox)
        entry = cache_root() / key
        cached = _cached_artifact(entry)
        if cached:
            log = (entry / "log.txt").read_text()
            return CompileResult(True, cached, log, time.monotonic() - started, True)
        with tempfile.TemporaryDirectory(prefix="kjudge-build-") as tmp:
            build = Path(tmp)
            build.chmod(0o777)
            (build / self.source_name).write_text(source)
            for name, text in self.support_sources().items():
                (build / name).write_text(text)
            artifact_name = "artifact.so" if self.loader == "native" else self.source_name
            command = self.compile_command(self.source_name, artifact_name, device, sandbox)
            log, ok, timed_out = "", True, False
            if command:
                mount = Mount(build, BUILD_DIR, writable=True)
                result = sandbox.run(command, mounts=[mount], cwd=mount,
                                     env=self.runtime_env(device, sandbox), limits=limits,
                                     timeout_s=timeout_s)
                log, timed_out = result.output[-MAX_LOG:], result.timed_out
                ok = result.returncode == 0 and (build / artifact_name).is_file()
                if timed_out:
                    log += f"\ncompilation ran past {timeout_s:g} s and was stopped"
                elif result.memory_exceeded:
                    log += f"\nthe compiler ran past its {limits.memory_mb} MB memory limit"
                elif result.returncode == 0 and not ok:
                    log += "\nthe compiler produced no output file"
            if not ok:
                return CompileResult(False, None, log, time.monotonic() - started,
                                     timed_out=timed_out)
            artifact = _store(entry, build / artifact_name, log)
        return CompileResult(True, artifact, log, time.monotonic() - started)


class PythonKernelLanguage(Language):
    """A Python module whose run_kernel launches kernels written in a package's DSL (Triton,
    TileLang): what those languages share, as DMOJ's script executor holds what scripts do. A
    new one is its package, its decorators, its starter's imports and its runtime environment."""

    extensions = (".py",)
    devices = ("cpu", "cuda", "maca")
    source_name = "submission.py"
    # compiled at the first call of each new shape on a GPU (Triton interprets on the CPU)
    jit_devices = ("cuda", "maca")
    kernel_decorators = ("jit",)

    def host_toolchain_version(self) -> str:
        return f"{self.packages[0]} {package_version(self.packages[0])}"


class NativeLanguage(Language):
    """A C++ dialect with the extern "C" run_kernel ABI, built by its compiler into a shared
    library (cpp, cuda, maca): the compiler from an environment variable or its default, its
    flags likewise, and the C spelling of the types its headers name (half, fp8)."""

    loader = "native"
    lexer = "cpp"
    # the fields of judge/settings.py that name its compiler and flags (KJUDGE_CXX, ...)
    compiler_setting = ""
    flags_setting = ""
    default_compiler = ""  # the tool's own name, where its setting is empty
    c_types: dict[str, str] = {}  # dtype -> C type where it differs from protocol.DTYPES

    @property
    def compiler(self) -> str:
        """The compiler on the host."""
        return getattr(settings(), self.compiler_setting) or self.default_compiler

    def compiler_in(self, sandbox: Sandbox | None) -> str:
        """The compiler a compile in `sandbox` runs: the host's, or in an image the tool's own
        name, found on the image's PATH (a host path means nothing there)."""
        return self.compiler if on_host(sandbox) else self.default_compiler

    @property
    def flags(self) -> list[str]:
        return shlex.split(getattr(settings(), self.flags_setting))

    def host_toolchain_version(self) -> str:
        return tool_version((self.compiler, "--version"))

    def check_source(self, source: str) -> str | None:
        return None

    def declaration(self, args: Sequence[Arg]) -> str:
        return signature.c_declaration(args, self.c_types)


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Name) and t.id == name for t in targets)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name) == name for a in node.names)
    if isinstance(node, (ast.If, ast.Try)):
        return any(_binds(child, name) for child in node.body)
    return False


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cached_artifact(entry: Path) -> Path | None:
    """A cache entry is used only when complete and its artifact still has its recorded hash."""
    try:
        meta = json.loads((entry / "meta.json").read_text())
        artifact = entry / meta["artifact"]
        if _sha256(artifact) == meta["sha256"]:
            return artifact
    except (OSError, ValueError, KeyError):
        pass
    shutil.rmtree(entry, ignore_errors=True)
    return None


def _store(entry: Path, built: Path, log: str) -> Path:
    tmp = entry.with_name(entry.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copy2(built, tmp / built.name)
    (tmp / "log.txt").write_text(log)
    meta = {"artifact": built.name, "sha256": _sha256(built), "created": time.time()}
    (tmp / "meta.json").write_text(json.dumps(meta))
    for path in (tmp, *tmp.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    try:
        tmp.rename(entry)
    except OSError:  # another worker stored the same key first
        shutil.rmtree(tmp, ignore_errors=True)
    return entry / built.name


@cache
def support_source(name: str) -> str:
    return (Path(__file__).parent / "support" / name).read_text()


@cache
def tool_version(argv: tuple[str, ...]) -> str:
    """A tool's version line: the 'release' line (nvcc) or the first line (gcc, mxcc)."""
    if not shutil.which(argv[0]):
        return "missing"
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [line for line in out.splitlines() if line.strip()]
    return next((line for line in lines if "release" in line), lines[0] if lines else "unknown")


@cache
def package_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"
