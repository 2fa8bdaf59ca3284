"""What the backends that start a run as a child process share (process, bwrap): the command
line that wraps argv, a cgroup made before exec, rlimits and a session of its own, the protocol
over the child's pipes."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import threading
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path

from sandbox.base import (
    DEFAULT_PATH,
    Mount,
    Sandbox,
    SandboxLimits,
    SandboxProcess,
    parse_cpus,
    process_tree,
)
from sandbox.cgroup import Cgroup


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

    def _start_freeze(self, frozen: bool) -> None:
        if self.cgroup:
            self.cgroup.start_freeze(frozen)

    def cpu_ns(self) -> int | None:
        return self.cgroup.cpu_ns() if self.cgroup else None

    def mark_memory(self) -> float:
        return self.cgroup.mark_memory() / 2**20 if self.cgroup else 0.0

    def _adjust(self, limits: SandboxLimits) -> None:
        if self.cgroup is not None:  # without one no cap was applied at the start either
            self.cgroup.set_memory(limits.memory_mb * 2**20)
            self.cgroup.set_idle(limits.cpu_idle)
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


class CommandSandbox(Sandbox):
    """A backend whose runs are child processes of the judge, started through `command()`."""

    @abstractmethod
    def command(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: Mount) -> list[str]:
        """The full command line that runs argv inside this sandbox."""

    def cwd_arg(self, cwd: Mount) -> str | None:
        return None if self.isolates_filesystem else str(cwd.host)

    def limits_applied(self) -> dict:
        """Each run in a cgroup of the judge's: what this host's cgroups allow (a cgroup is
        made and removed to tell)."""
        return Cgroup.probe()

    def spawn(self, argv: Sequence[str], *, mounts: Sequence[Mount], cwd: Mount,
              env: dict[str, str], limits: SandboxLimits,
              protocol: bool = True) -> SandboxProcess:
        cgroup = Cgroup.create(limits.memory_mb * 2**20, limits.pids, limits.cpus,
                               limits.cpu_idle)
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
