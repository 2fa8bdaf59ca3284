"""Warm slots: a judging's job directory and its two harness processes, started ahead of it.

Trusted side. Starting a sandboxed harness costs an interpreter and `import torch` (~2 s of CPU
each on a 2-core VM), twice per judging (the submission and the baseline). A slot does that
before the judging arrives: its processes are sandboxed as every run is (each its own sandbox,
namespaces and control group), have imported torch and nothing else — on a GPU no CUDA context
exists yet: the harness creates it after its config — and wait on stdin for the judging's config
(judge/harness/protocol.py). A slot serves one judging and is destroyed with it, so nothing of
one judging (processes, memory, files, device context) is ever seen by another.

`SlotPool` keeps the next slot warm for a worker: started as soon as the last one is taken, at
idle priority (it takes only CPU time nothing else wants), and frozen whole while a judging times
its calls (`quiet`), so a warm-up never competes with a timed call.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from judge.harness import protocol
from judge.host.device import DeviceInfo
from judge.settings import settings
from sandbox import Mount, ProtocolError, Sandbox, SandboxLimits, SandboxProcess, cgroup

log = logging.getLogger("kjudge.warm")
HARNESS_DIR = Path(protocol.__file__).parent
ROLES = ("baseline", "submission")
UNTIMED = ("submission",)  # an untimed judging's roles: no baseline to time against
JOB_PREFIX = "kjudge-job-"  # then the judge's pid: a dead judge's directories can be told
# while it waits: enough for the interpreter and torch; the judging sets its own when it takes it
WARM_LIMITS = SandboxLimits(memory_mb=4096, output_bytes=64 * 1024, file_size_mb=1 << 16)


@dataclass
class WarmHarness:
    """One started harness of a slot: its process and the folders it sees."""

    role: str
    proc: SandboxProcess
    sub: Mount  # read-only to the run: the artifact goes here when the judging takes the slot
    scratch: Mount  # the run's only writable folder
    greeted: bool = False  # its "warm" greeting has been read

    def await_warm(self, timeout: float) -> None:
        """Read the greeting that says torch is imported (ProtocolError if it never comes)."""
        if self.greeted:
            return
        reply = self.proc.receive(timeout)
        if reply.get("stage") != "warm":
            raise ProtocolError(f"unexpected greeting {reply}")
        self.greeted = True


@dataclass
class Slot:
    """A judging's job directory (inputs, and per role its artifact folder and scratch) with
    both harnesses started in it."""

    workdir: Path
    inputs: Mount
    env: dict[str, str]  # the environment the processes started with
    ahead: bool = True  # started before its judging came (else by the judging itself)
    harnesses: dict[str, WarmHarness] = field(default_factory=dict)
    taken: bool = False

    @classmethod
    def start(cls, sandbox: Sandbox, env: dict[str, str], ahead: bool = True,
              idle: bool = False, wrap: Callable[[str], list[str]] | None = None,
              shown: Sequence[Path] = (), roles: Sequence[str] = ROLES) -> Slot:
        """Start the harnesses of `roles` (both, or UNTIMED's one: a baseline's interpreter and
        torch import that no untimed judging uses), `ahead` of their judging, at `idle` CPU
        priority until taken, while another judging runs; `wrap`: the submission's harness runs
        under the command it gives for its scratch folder's sandbox path (a profiler), whose
        `shown` folders its sandbox shows, read-only, where they are."""
        workdir = Path(tempfile.mkdtemp(prefix=f"{JOB_PREFIX}{os.getpid()}-", dir=work_root()))
        workdir.chmod(0o755)
        inputs = Mount(workdir / "inputs", "/kj/inputs")
        inputs.host.mkdir()
        slot = cls(workdir, inputs, env, ahead)
        # every CPU the judge may use for now, so that the run's cgroup has a CPU set that the
        # judging narrows to the contenders' CPUs (a run then cannot move itself elsewhere)
        cpus = ",".join(map(str, sorted(os.sched_getaffinity(0))))
        limits = replace(WARM_LIMITS, cpu_idle=idle, cpus=cpus)
        try:
            for role in roles:
                wrapped = role == "submission"
                slot.harnesses[role] = slot._spawn(sandbox, role, limits,
                                                   wrap if wrapped else None,
                                                   shown if wrapped else ())
        except BaseException:
            slot.close()
            raise
        return slot

    def _spawn(self, sandbox: Sandbox, role: str, limits: SandboxLimits,
               wrap: Callable[[str], list[str]] | None = None,
               shown: Sequence[Path] = ()) -> WarmHarness:
        root = self.workdir / role
        (root / "sub").mkdir(parents=True)
        (root / "scratch").mkdir()
        (root / "scratch").chmod(0o777)
        sub = Mount(root / "sub", "/kj/sub")
        scratch = Mount(root / "scratch", "/kj/scratch", writable=True)
        harness = Mount(HARNESS_DIR, "/kj/harness")
        argv = [sandbox.python, "-E", "-s", "-B", sandbox.path(harness, "main.py")]
        if wrap is not None:
            argv = wrap(sandbox.path(scratch)) + argv
        tools = [Mount(folder, str(folder)) for folder in shown]
        proc = sandbox.spawn(argv, mounts=[sub, scratch, harness, self.inputs, *tools],
                             cwd=scratch,
                             env=self.env, limits=limits)
        return WarmHarness(role, proc, sub, scratch)

    def alive(self) -> bool:
        return all(h.proc.returncode() is None for h in self.harnesses.values())

    def serves(self, env: dict[str, str], roles: Sequence[str]) -> bool:
        """Whether it can serve a judging that starts with `env` and needs `roles`."""
        return self.env == env and set(roles) <= self.harnesses.keys() and self.alive()

    def freeze(self, frozen: bool) -> None:
        for harness in self.harnesses.values():
            harness.proc.freeze(frozen)

    def close(self) -> None:
        for harness in self.harnesses.values():
            with contextlib.suppress(Exception):
                harness.proc.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


# /dev/shm is the work root only with this much free (a container's default 64 MB is not)
SHM_ROOM_BYTES = 2 * 2**30


def work_root() -> str | None:
    """Where jobs keep their files: KJUDGE_WORK_DIR, else /dev/shm when it has room (no disk
    write-back under the timed calls), else the system's temporary directory (None)."""
    chosen = settings().work_dir
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)  # a new host's first judging makes it
        return chosen
    try:
        stats = os.statvfs("/dev/shm")
        if os.access("/dev/shm", os.W_OK) and stats.f_bavail * stats.f_frsize > SHM_ROOM_BYTES:
            return "/dev/shm"
    except OSError:
        pass
    return None


def contender_cpus(device: DeviceInfo) -> str | None:
    """Both contenders keep to the same CPUs, `cpu_threads()` of them: the last ones this judge
    may use (the judge and the services keep the rest), or the `contender_cpus` setting.
    On the CPU device a helper thread of the submission then takes time from its own turns,
    which the judge measures, instead of running free on another core; on a GPU the host side
    of every call (launches, copies, the synchronize) runs on the same cores for both, away
    from the judge's drawing of the next inputs."""
    return settings().contender_cpus or ",".join(
        map(str, sorted(os.sched_getaffinity(0))[-cpu_threads():]))


def cpu_threads() -> int:
    """Threads each contender may use on the CPU device: one keeps timings reproducible on
    shared hosts, where a second busy core would slow a multi-threaded baseline at random."""
    return settings().cpu_threads


def startup_env(sandbox: Sandbox, device: DeviceInfo) -> dict[str, str]:
    """What a harness must have in its environment when it starts, the same for every judging on
    this device and sandbox; a language's own environment is applied by the harness from its
    config."""
    env = {"KJUDGE_DEVICE": device.kind, "OMP_NUM_THREADS": str(cpu_threads()),
           **sandbox.device_env(device)[0]}
    if device.kind != "cpu" and "LD_LIBRARY_PATH" in os.environ:
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]  # where the host's driver is
    return env


def remove_leftovers() -> int:
    """Job directories and run cgroups of judges that died (killed mid-judging, or with a slot
    waiting): their process is gone. On /dev/shm the directories hold memory until removed.
    Returns how many."""
    removed = cgroup.remove_orphans()
    for folder in Path(work_root() or tempfile.gettempdir()).glob(f"{JOB_PREFIX}*-*"):
        pid = folder.name.removeprefix(JOB_PREFIX).partition("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


class SlotPool:
    """The next judging's slot, kept warm for one worker (one judging at a time), with the
    harnesses of `roles` (UNTIMED where the judgings to come are untimed)."""

    def __init__(self, sandbox: Sandbox, roles: Sequence[str] = ROLES):
        if remove_leftovers():
            log.warning("removed the job directories and cgroups of judges that died")
        self.sandbox = sandbox
        self.roles = roles
        self._lock = threading.Lock()
        self._next: Slot | None = None
        self._starting: threading.Thread | None = None
        self._quiet = 0
        self._closed = False
        self._last = False

    def ending(self) -> None:
        """The next judging is the pool's last (a validation's): no slot is warmed behind it,
        whose interpreters and torch imports nobody would take."""
        self._last = True

    def take(self, env: dict[str, str], roles: Sequence[str] = ROLES) -> Slot:
        """A warm slot started with `env` and the harnesses of `roles` (a fresh one when none
        is ready), and the next one started behind it unless this is the last (`ending`)."""
        self._join()
        with self._lock:
            slot, self._next = self._next, None
        if slot is not None and not slot.serves(env, roles):
            slot.close()
            slot = None
        if slot is None:
            slot = Slot.start(self.sandbox, env, ahead=False, roles=roles)
        slot.taken = True
        slot.freeze(False)
        if not self._last:
            self.prepare(env)
        return slot

    def prepare(self, env: dict[str, str]) -> None:
        """Start the next slot (it costs the judging in progress nothing but idle CPU time).
        Runs that die with the thread that started them (bwrap's --die-with-parent, unshare's
        --kill-child: a parent-death signal follows the thread) are started here, in the
        caller's thread, which lives on (~20 ms); containers in the background."""
        if self._closed:
            return
        if self.sandbox.runs_die_with_thread:
            self._start(env)
            return
        self._starting = threading.Thread(target=self._start, args=(env,), daemon=True,
                                          name="kjudge-warm")
        self._starting.start()

    def _start(self, env: dict[str, str]) -> None:
        try:
            slot = Slot.start(self.sandbox, env, idle=True, roles=self.roles)
        except Exception as exc:  # the next judging starts its own, and says why if it fails
            log.warning("could not start a warm slot: %s", exc)
            return
        with self._lock:
            if self._closed:
                slot.close()
                return
            self._next = slot
            if self._quiet:
                slot.freeze(True)

    def _join(self) -> None:
        if self._starting is not None:
            self._starting.join()
            self._starting = None

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """While a judging times its calls: the waiting slot is frozen (one that is still being
        started freezes itself once started)."""
        with self._lock:
            self._quiet += 1
            if self._next is not None:
                self._next.freeze(True)
        try:
            yield
        finally:
            with self._lock:
                self._quiet -= 1
                if self._next is not None and not self._quiet:
                    self._next.freeze(False)

    def close(self) -> None:
        self._closed = True
        self._join()
        with self._lock:
            slot, self._next = self._next, None
        if slot is not None:
            slot.close()
