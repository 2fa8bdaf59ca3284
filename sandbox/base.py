"""The sandbox interface every backend implements (process, bwrap; docker later).

A backend starts a command with a set of mounts, limits and a scrubbed environment, and hands
back a `SandboxProcess`: stdin/stdout pipes for the harness protocol, stderr captured up to the
output limit, a cgroup for memory and process caps, and a kill that leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import resource
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.cgroup import Cgroup

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_PROTOCOL_LINE = 1 << 20


@dataclass(frozen=True)
class Mount:
    host: Path
    target: str  # where the sandboxed command sees it (isolating backends)
    writable: bool = False


@dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 4096
    pids: int = 256
    output_bytes: int = 64 * 1024
    file_size_mb: int = 2048


@dataclass
class RunResult:
    returncode: int
    output: str
    timed_out: bool
    wall_s: float
    output_exceeded: bool = False
    memory_exceeded: bool = False


class ProtocolError(Exception):
    """The sandboxed side broke the protocol, died, or did not answer in time."""


class ReplyTimeout(ProtocolError):
    pass


class ProcessDied(ProtocolError):
    pass


@dataclass
class SandboxProcess:
    popen: subprocess.Popen
    cgroup: Cgroup | None
    output_limit: int
    started: float = field(default_factory=time.monotonic)
    _log: bytearray = field(default_factory=bytearray)
    output_exceeded: bool = False
    _lines: queue.Queue = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        if self.popen.stdout is not None:
            threading.Thread(target=self._read_stdout, daemon=True).start()

    def _drain_stderr(self) -> None:
        stream = self.popen.stderr
        assert stream is not None
        while chunk := stream.read1(65536):
            room = self.output_limit - len(self._log)
            self._log += chunk[: max(room, 0)]
            if len(chunk) > room:
                self.output_exceeded = True
                self.kill()
                break

    def _read_stdout(self) -> None:
        stream = self.popen.stdout
        assert stream is not None
        while line := stream.readline(MAX_PROTOCOL_LINE):
            self._lines.put(line)
        self._lines.put(None)

    # -- protocol -----------------------------------------------------------------------
    def send(self, message: dict) -> None:
        try:
            assert self.popen.stdin is not None
            self.popen.stdin.write(json.dumps(message).encode() + b"\n")
            self.popen.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ProcessDied(f"the sandboxed process is gone ({exc})") from None

    def receive(self, timeout: float) -> dict:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise ReplyTimeout(f"no answer within {timeout:.1f} s") from None
        if line is None:
            self._lines.put(None)
            raise ProcessDied("the sandboxed process exited")
        try:
            message = json.loads(line)
        except ValueError:
            raise ProtocolError(f"malformed protocol line: {line[:200]!r}") from None
        if not isinstance(message, dict):
            raise ProtocolError("protocol message is not an object")
        return message

    def request(self, message: dict, timeout: float) -> dict:
        self.send(message)
        return self.receive(timeout)

    # -- lifecycle ------------------------------------------------------------------------
    def log(self) -> str:
        return self._log.decode(errors="replace")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.popen.kill()
        if self.cgroup:
            self.cgroup.kill_all()

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Kill whatever is left and release the cgroup; safe to call twice."""
        self.kill()
        self.wait(5)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            with contextlib.suppress(OSError):
                if stream:
                    stream.close()
        if self.cgroup:
            self.cgroup.remove()

    def peak_memory_mb(self) -> float:
        if self.cgroup:
            return self.cgroup.peak_bytes() / 2**20
        return 0.0

    def memory_exceeded(self) -> bool:
        return bool(self.cgroup and self.cgroup.oom_killed())

    def exit_description(self) -> str:
        code = self.popen.poll()
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        if code > 128 and code - 128 in signal.Signals._value2member_map_:
            return f"killed by {signal.Signals(code - 128).name}"
        return f"exit code {code}"


class Sandbox(ABC):
    name: str = "abstract"
    isolates_filesystem: bool = False

    @classmethod
    @abstractmethod
    def available(cls) -> bool: ...

    @abstractmethod
    def command(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: Mount) -> list[str]:
        """The full command line that runs argv inside this sandbox."""

    def path(self, mount: Mount, *parts: str) -> str:
        """Where a host path inside `mount` is seen by the sandboxed command."""
        base = mount.target if self.isolates_filesystem else str(mount.host)
        return str(Path(base, *parts))

    def cwd_arg(self, cwd: Mount) -> str | None:
        return None if self.isolates_filesystem else str(cwd.host)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount],
        cwd: Mount,
        env: dict[str, str],
        limits: SandboxLimits,
        protocol: bool = True,
    ) -> SandboxProcess:
        cgroup = Cgroup.create(limits.memory_mb * 2**20, limits.pids)
        full_env = {"PATH": DEFAULT_PATH, "HOME": self.path(cwd), "TMPDIR": self.path(cwd),
                    "LANG": "C.UTF-8", **env}
        popen = subprocess.Popen(
            self.command(argv, mounts, cwd),
            stdin=subprocess.PIPE if protocol else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if protocol else subprocess.STDOUT,
            cwd=self.cwd_arg(cwd),
            env=full_env,
            preexec_fn=_child_setup(cgroup, limits),
            close_fds=True,
        )
        if not protocol:  # stdout and stderr share one pipe: drain it as the log
            popen.stderr, popen.stdout = popen.stdout, None
        return SandboxProcess(popen, cgroup, limits.output_bytes)

    def run(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount],
        cwd: Mount,
        env: dict[str, str],
        limits: SandboxLimits,
        timeout_s: float,
    ) -> RunResult:
        """Run a command to completion (compilers): output merged, killed at the timeout."""
        proc = self.spawn(argv, mounts=mounts, cwd=cwd, env=env, limits=limits, protocol=False)
        code = proc.wait(timeout_s)
        timed_out = code is None
        proc.close()
        return RunResult(
            returncode=proc.popen.returncode if not timed_out else -9,
            output=proc.log(),
            timed_out=timed_out,
            wall_s=time.monotonic() - proc.started,
            output_exceeded=proc.output_exceeded,
            memory_exceeded=proc.memory_exceeded(),
        )


def _child_setup(cgroup: Cgroup | None, limits: SandboxLimits):
    procs_files = cgroup.procs_files() if cgroup else []
    file_size = limits.file_size_mb * 2**20

    def setup() -> None:  # runs in the child between fork and exec
        os.setsid()
        pid = str(os.getpid())
        for path in procs_files:
            with open(path, "w") as f:
                f.write(pid)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return setup
