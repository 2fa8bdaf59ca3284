"""The sandbox interface every backend implements (process, bwrap, docker).

A backend starts a command with a set of mounts, limits and a scrubbed environment, and hands
back a `SandboxProcess`: stdin/stdout pipes for the harness protocol, stderr captured up to the
output limit, a cgroup for memory and process caps, and a kill that leaves nothing behind. It is
built from a `SandboxConfig` (the judge fills one from its settings) and names the one device its
runs see (`device_env`). Backends that start the run as a child process share
sandbox/command.py; docker hands the run to the engine.
"""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
        self._freeze_on_reply = False

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

    @abstractmethod
    def _start_freeze(self, frozen: bool) -> None:
        """Ask for the run to be frozen or thawed, without waiting; nothing where the host
        cannot."""

    def _add_stdout(self, chunk: bytes) -> None:
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        if lines and self._freeze_on_reply:
            self._freeze_on_reply = False
            self._start_freeze(True)
        for line in lines:
            self._lines.put(line[:MAX_PROTOCOL_LINE])
        if len(self._partial) > MAX_PROTOCOL_LINE:
            self._lines.put(self._partial[:MAX_PROTOCOL_LINE])
            self._partial = b""

    def _stdout_closed(self) -> None:
        self._lines.put(None)

    def send(self, message: dict, turn: bool = False) -> None:
        """Write a protocol line. With `turn` the run (frozen) is thawed once the line is
        written, and frozen again as soon as the reader sees its next line, before the line is
        handed over: a thread the run leaves working can run only within the judge's clock
        around the request, and after the reply for as long as the kernel takes to stop it
        (the caller waits in `freeze`, which says when that is done)."""
        self._freeze_on_reply = turn
        try:
            self._write(json.dumps(message).encode() + b"\n")
        except OSError as exc:
            raise ProcessDied(f"the sandboxed process is gone ({exc})") from None
        if turn:
            self._start_freeze(False)

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

    def replied(self) -> bool:
        """Whether a line (or the end of the output) waits to be received."""
        return not self._lines.empty()

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


@dataclass(frozen=True)
class SandboxConfig:
    """What backends are built from (judge/settings.py fills it from KJUDGE_* settings)."""

    docker_image: str = ""  # pinned by digest: name@sha256:… or sha256:…
    docker_python: str = "python3"  # the interpreter inside the image
    docker_host_python: bool = False  # bind the host's /usr and Python (test images)
    docker_cpus: float = 1.0
    owner: str = ""  # the label of a worker's containers (its leftovers are removed)
    system_paths: tuple[str, ...] = ()  # bwrap: toolchain folders outside /usr


class Sandbox(ABC):
    """A backend: a module of this package defining `BACKEND` (the registry is the folder) says
    on its class what it keeps a run from, what the host needs for it, where `auto` ranks it,
    and how a worker cleans up after a predecessor that died."""

    name: str = "abstract"
    isolates_filesystem: bool = False
    keeps_out: str = "nothing (host files, network and processes are reachable)"
    needs: str = ""  # what the host must have for `available` to hold, said when it does not
    auto_rank: int | None = None  # `auto` takes the lowest available; None: only by name
    gpu_by_request = False  # True: the runtime gives a run only its one NVIDIA GPU (docker)
    # a run is killed when the thread that started it ends (a parent-death signal: bwrap's
    # --die-with-parent, unshare's --kill-child), so only long-lived threads may start runs
    runs_die_with_thread = True
    # only code the judge's organizers wrote may run in it (sandbox/trusted.py): never a
    # submission, never chosen by `auto`
    trusted_code_only = False

    @classmethod
    @abstractmethod
    def available(cls, config: SandboxConfig | None = None) -> bool: ...

    @classmethod
    def from_config(cls, config: SandboxConfig, devices: Sequence[str] = (),
                    gpu_uuid: str | None = None) -> Sandbox:
        """The backend for this configuration, its runs allowed the device nodes `devices`
        (and, where the runtime hands out GPUs, the NVIDIA GPU `gpu_uuid`)."""
        return cls()

    @classmethod
    def remove_leftovers(cls, config: SandboxConfig) -> int:
        """What runs of an earlier worker of this owner (`config.owner`) left behind when it
        died mid-judging, removed; how many. Runs that die with their parent leave nothing."""
        return 0

    def limits_applied(self) -> dict:
        """Which limits a run gets on this host (said with every self-test table)."""
        return {}

    @property
    def python(self) -> str:
        """The interpreter that runs the harness inside this sandbox."""
        return sys.executable

    @property
    def host_system(self) -> bool:
        """Whether runs see the host's own system (its libraries, drivers and toolchains)."""
        return True

    @property
    def system_id(self) -> str:
        """What names the system runs see when it is not the host's (an image's pinned id): in
        the compile and JIT cache keys and the record's toolchain. Empty for the host's."""
        return ""

    def path(self, mount: Mount, *parts: str) -> str:
        """Where a host path inside `mount` is seen by the sandboxed command."""
        base = mount.target if self.isolates_filesystem else str(mount.host)
        return str(Path(base, *parts))

    def device_env(self, device) -> tuple[dict[str, str], str]:
        """The environment that shows a run its one device (a judge's DeviceInfo: `kind`,
        `torch_name`, `uuid`), and torch's name for it inside the run: `cuda:0`, also on MetaX
        cards, whose torch build keeps torch.cuda's names. NVIDIA GPUs are named by UUID: a
        sandbox that shows only /dev/nvidia<minor> has one GPU, index 0, whatever the host's."""
        kind, _, index = device.torch_name.partition(":")
        if kind != "cuda":
            return {}, device.torch_name
        if device.kind == "maca":
            return {"CUDA_VISIBLE_DEVICES": index or "0",
                    "MACA_VISIBLE_DEVICES": index or "0"}, "cuda:0"
        return {"CUDA_VISIBLE_DEVICES": device.uuid or index or "0"}, "cuda:0"

    @abstractmethod
    def spawn(self, argv: Sequence[str], *, mounts: Sequence[Mount], cwd: Mount,
              env: dict[str, str], limits: SandboxLimits,
              protocol: bool = True) -> SandboxProcess:
        """Start argv: with `protocol`, stdin and stdout carry the harness protocol and stderr
        is the log; without, stdout and stderr are one log (compilers)."""

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


def parse_cpus(cpus: str) -> set[int]:
    """The CPUs of a cpuset list such as "0,2-3"."""
    found: set[int] = set()
    for part in cpus.split(","):
        first, _, last = part.partition("-")
        found.update(range(int(first), int(last or first) + 1))
    return found
