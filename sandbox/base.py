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
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
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
    cpus: str | None = None  # a cpuset list ("1", "2-3"): the run keeps to those CPUs
    # runs only on CPU time nothing else wants (SCHED_IDLE; docker: the least CPU shares): a
    # warm harness waiting for its judging must not slow the judging in progress
    cpu_idle: bool = False


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


class SandboxProcess(ABC):
    """A running sandboxed command: protocol lines from its stdout, its stderr captured up to
    the output limit (beyond it the run is killed: OLE)."""

    def __init__(self, output_limit: int):
        self.output_limit = output_limit
        self.started = time.monotonic()
        self.output_exceeded = False
        self._log = bytearray()
        self._lines: queue.Queue = queue.Queue()
        self._partial = b""

    # -- what a backend provides -----------------------------------------------------------
    @abstractmethod
    def _write(self, data: bytes) -> None: ...

    @abstractmethod
    def kill(self) -> None: ...

    @abstractmethod
    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status, or None while it still runs after `timeout`."""

    @abstractmethod
    def returncode(self) -> int | None: ...

    @abstractmethod
    def close(self) -> None:
        """Kill whatever is left and release every resource; safe to call twice."""

    @abstractmethod
    def peak_memory_mb(self) -> float: ...

    @abstractmethod
    def memory_exceeded(self) -> bool: ...

    @abstractmethod
    def pids(self) -> list[int]:
        """Host pids of every process of the run (for per-process GPU memory)."""

    @abstractmethod
    def freeze(self, frozen: bool) -> bool:
        """Stop every process of the run (threads it left running included), or resume them;
        False where this host cannot."""

    def cpu_ns(self) -> int | None:
        """CPU time the run has used so far, in nanoseconds; None where not accounted."""
        return None

    def mark_memory(self) -> float:
        """The run's memory now, in MiB (0 where not accounted); `peak_memory_mb` counts from
        here on where the host can reset a peak."""
        return 0.0

    def adjust(self, limits: SandboxLimits) -> None:
        """Apply a judging's limits to a run started ahead of it (a warm slot): memory, CPUs,
        output, normal CPU priority; OSError where they cannot be set. The run's file size
        limit is the harness's to lower (before any contestant code loads)."""
        self.output_limit = limits.output_bytes
        self._adjust(limits)

    @abstractmethod
    def _adjust(self, limits: SandboxLimits) -> None: ...

    # -- shared by all backends --------------------------------------------------------------
    def _add_log(self, chunk: bytes) -> bool:
        """Keep stderr up to the limit; False (and the run killed) once it is exceeded."""
        room = self.output_limit - len(self._log)
        self._log += chunk[: max(room, 0)]
        if len(chunk) > room:
            self.output_exceeded = True
            self.kill()
            return False
        return True

    def _add_stdout(self, chunk: bytes) -> None:
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            self._lines.put(line[:MAX_PROTOCOL_LINE])
        if len(self._partial) > MAX_PROTOCOL_LINE:
            self._lines.put(self._partial[:MAX_PROTOCOL_LINE])
            self._partial = b""

    def _stdout_closed(self) -> None:
        self._lines.put(None)

    def send(self, message: dict) -> None:
        try:
            self._write(json.dumps(message).encode() + b"\n")
        except OSError as exc:
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

    def log(self) -> str:
        return self._log.decode(errors="replace")

    def exit_description(self) -> str:
        code = self.returncode()
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        if code > 128 and code - 128 in signal.Signals._value2member_map_:
            return f"killed by {signal.Signals(code - 128).name}"
        return f"exit code {code}"


class PopenProcess(SandboxProcess):
    """A sandboxed command started as a child process (process and bwrap backends)."""

    def __init__(self, popen: subprocess.Popen, cgroup: Cgroup | None, output_limit: int):
        super().__init__(output_limit)
        self.popen = popen
        self.cgroup = cgroup
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        if popen.stdout is not None:
            threading.Thread(target=self._read_stdout, daemon=True).start()

    def _drain_stderr(self) -> None:
        stream = self.popen.stderr
        while (chunk := stream.read1(65536)) and self._add_log(chunk):
            pass

    def _read_stdout(self) -> None:
        while chunk := self.popen.stdout.read1(65536):
            self._add_stdout(chunk)
        self._stdout_closed()

    def _write(self, data: bytes) -> None:
        self.popen.stdin.write(data)
        self.popen.stdin.flush()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.popen.kill()
        if self.cgroup:
            self.cgroup.freeze(False)  # a frozen task dies only once thawed
            self.cgroup.kill_all()

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def returncode(self) -> int | None:
        return self.popen.poll()

    def close(self) -> None:
        self.kill()
        self.wait(5)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            with contextlib.suppress(OSError):
                if stream:
                    stream.close()
        if self.cgroup:
            self.cgroup.remove()

    def peak_memory_mb(self) -> float:
        return self.cgroup.peak_bytes() / 2**20 if self.cgroup else 0.0

    def memory_exceeded(self) -> bool:
        return bool(self.cgroup and self.cgroup.oom_killed())

    def pids(self) -> list[int]:
        return self.cgroup.pids() if self.cgroup else process_tree(self.popen.pid)

    def freeze(self, frozen: bool) -> bool:
        return bool(self.cgroup and self.cgroup.freeze(frozen))

    def cpu_ns(self) -> int | None:
        return self.cgroup.cpu_ns() if self.cgroup else None

    def mark_memory(self) -> float:
        return self.cgroup.mark_memory() / 2**20 if self.cgroup else 0.0

    def _adjust(self, limits: SandboxLimits) -> None:
        if self.cgroup is not None:  # without one no cap was applied at the start either
            self.cgroup.set_memory(limits.memory_mb * 2**20)
            if limits.cpus:
                self.cgroup.set_cpus(limits.cpus)  # else the harness holds itself there
        if not limits.cpu_idle:
            for _ in range(2):  # a thread started meanwhile inherited the old policy
                for tid in self._threads():
                    with contextlib.suppress(OSError):
                        os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))

    def _threads(self) -> list[int]:
        if self.cgroup is not None:
            return self.cgroup.threads()
        return [int(t.name) for pid in process_tree(self.popen.pid)
                for t in Path(f"/proc/{pid}/task").glob("[0-9]*")]


class Sandbox(ABC):
    name: str = "abstract"
    isolates_filesystem: bool = False

    @classmethod
    @abstractmethod
    def available(cls) -> bool: ...

    @property
    def python(self) -> str:
        """The interpreter that runs the harness inside this sandbox."""
        return sys.executable

    gpu_by_request = False  # True: the runtime gives a run only its one NVIDIA GPU (docker)
    # a run is killed when the thread that started it ends (a parent-death signal: bwrap's
    # --die-with-parent, unshare's --kill-child), so only long-lived threads may start runs
    runs_die_with_thread = True

    @property
    def host_system(self) -> bool:
        """Whether runs see the host's own system (its libraries, drivers and toolchains)."""
        return True

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
        cgroup = Cgroup.create(limits.memory_mb * 2**20, limits.pids, limits.cpus)
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
        return PopenProcess(popen, cgroup, limits.output_bytes)

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
            returncode=proc.returncode() if not timed_out else -9,
            output=proc.log(),
            timed_out=timed_out,
            wall_s=time.monotonic() - proc.started,
            output_exceeded=proc.output_exceeded,
            memory_exceeded=proc.memory_exceeded(),
        )


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rpartition(")")[2].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _child_setup(cgroup: Cgroup | None, limits: SandboxLimits):
    procs_files = cgroup.procs_files() if cgroup else []
    file_size = limits.file_size_mb * 2**20

    cpus = parse_cpus(limits.cpus) if limits.cpus else None
    idle = limits.cpu_idle

    def setup() -> None:  # runs in the child between fork and exec
        os.setsid()
        if idle:  # inherited by every process and thread the run starts
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        if cpus:  # the cgroup's cpuset holds it there; the affinity alone where there is none
            os.sched_setaffinity(0, cpus)
        pid = str(os.getpid())
        for path in procs_files:
            with open(path, "w") as f:
                f.write(pid)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return setup


def parse_cpus(cpus: str) -> set[int]:
    """The CPUs of a cpuset list such as "0,2-3"."""
    found: set[int] = set()
    for part in cpus.split(","):
        first, _, last = part.partition("-")
        found.update(range(int(first), int(last or first) + 1))
    return found
