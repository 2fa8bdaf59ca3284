"""Per-run control groups: a hard memory cap (MLE), a process cap (fork bombs), peak memory, a
freezer (a run is stopped whole while the other contender is timed) and a CPU set (a timed run
keeps to its core: a thread it starts takes that core's time, which the judge's clock sees).

Works with cgroup v2 (unified) and v1 (separate memory, pids, freezer and cpuset hierarchies).
Where none is writable, `Cgroup.create` returns None and the backend records that limits were not
applied.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "kjudge"


class Cgroup:
    def __init__(self, dirs: dict[str, Path], unified: bool):
        self.dirs = dirs  # controller -> directory ("unified" for v2)
        self.unified = unified

    @classmethod
    def create(cls, memory_bytes: int, pids: int, cpus: str | None = None,
               idle: bool = False) -> Cgroup | None:
        """A new group; `cpus` (a cpuset list such as "1") keeps its tasks on those CPUs; an
        `idle` group gets the least CPU weight (see `set_idle`)."""
        # the judge's pid in the name: a group whose judge died is found (remove_orphans)
        name = f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            if (ROOT / "cgroup.controllers").exists():
                group = cls._create_v2(name, memory_bytes, pids)
            else:
                group = cls._create_v1(name, memory_bytes, pids, cpus is not None)
        except OSError:
            return None
        if cpus is not None:
            group.cpus_applied = group._set_cpus(cpus)
        group.set_idle(idle)
        return group

    cpus_applied = False  # whether the group's tasks are held to the CPUs asked for

    @classmethod
    def probe(cls) -> dict[str, bool]:
        """Which of its limits a run gets on this host (a group made, tried and removed): the
        memory and process caps, the freezer, the CPU set, the CPU time meter. All False where
        no group can be made (cgroups mounted read-only, as in a container or a microVM)."""
        cpu = str(min(os.sched_getaffinity(0)))
        group = cls.create(64 * 2**20, 16, cpu)
        if group is None:
            return dict.fromkeys(("memory", "pids", "freezer", "cpus", "cpu_time"), False)
        try:
            frozen = group.freeze(True)
            return {"memory": True, "pids": True, "freezer": frozen and group.freeze(False),
                    "cpus": group.cpus_applied, "cpu_time": group.cpu_ns() is not None}
        finally:
            group.remove()

    @classmethod
    def _create_v2(cls, name: str, memory_bytes: int, pids: int) -> Cgroup:
        parent = ROOT / PARENT
        parent.mkdir(exist_ok=True)
        (ROOT / "cgroup.subtree_control").write_text("+memory +pids")
        (parent / "cgroup.subtree_control").write_text("+memory +pids")
        for control in (ROOT / "cgroup.subtree_control", parent / "cgroup.subtree_control"):
            for controller in ("+cpuset", "+cpu"):
                with contextlib.suppress(OSError):  # a host may not delegate them
                    control.write_text(controller)
        path = parent / name
        path.mkdir()
        group = cls({"unified": path}, unified=True)
        (path / "memory.max").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):
            (path / "memory.swap.max").write_text("0")
        (path / "pids.max").write_text(str(pids))
        return group

    @classmethod
    def _create_v1(cls, name: str, memory_bytes: int, pids: int, cpuset: bool) -> Cgroup:
        dirs = {}
        made: dict[Path, Path] = {}  # one group per hierarchy: `cpu` and `cpuacct` are often one
        for controller in ("memory", "pids", "freezer", "cpuset", "cpuacct", "cpu"):
            optional = controller in ("freezer", "cpuset", "cpuacct", "cpu")
            if optional and not (ROOT / controller).is_dir():
                continue
            if controller == "cpuset" and not cpuset:
                continue
            hierarchy = (ROOT / controller).resolve()
            if hierarchy in made:
                dirs[controller] = made[hierarchy]
                continue
            parent = ROOT / controller / PARENT
            if controller == "cpuset" and not parent.is_dir():
                parent.mkdir()  # a v1 cpuset holds no task until its CPUs and nodes are set
                for setting in ("cpuset.cpus", "cpuset.mems"):
                    (parent / setting).write_text((ROOT / controller / setting).read_text())
            path = parent / name
            path.mkdir(parents=True)
            dirs[controller] = made[hierarchy] = path
        group = cls(dirs, unified=False)
        (dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (dirs["pids"] / "pids.max").write_text(str(pids))
        return group

    def set_memory(self, memory_bytes: int) -> None:
        """A new hard memory cap (a warm run gets its judging's own when it is taken)."""
        if self.unified:
            (self._memory_dir() / "memory.max").write_text(str(memory_bytes))
            return
        directory = self._memory_dir()
        # v1 keeps limit <= memsw limit: raise the pair in the order that keeps it so
        names = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
        current = int((directory / names[0]).read_text())
        for name in (names if memory_bytes < current else reversed(names)):
            if (directory / name).exists():
                (directory / name).write_text(str(memory_bytes))

    def set_cpus(self, cpus: str) -> bool:
        """Hold the group's tasks to `cpus` from now on; False where the host cannot."""
        self.cpus_applied = self._set_cpus(cpus)
        return self.cpus_applied

    def set_idle(self, idle: bool) -> bool:
        """Weigh the group as a run waiting for its judging (`idle`: the least CPU weight, so it
        gets only time nothing else wants) or as a judging's run (the default weight). The
        threads' own SCHED_IDLE is not enough: the kernel weighs each session's autogroup, or
        each group, equally whatever its threads' policy. False where there is no cpu
        controller here."""
        directory = self.dirs.get("unified" if self.unified else "cpu")
        if directory is None:
            return False
        name, value = (("cpu.weight", "1" if idle else "100") if self.unified
                       else ("cpu.shares", "2" if idle else "1024"))
        try:
            (directory / name).write_text(value)
            return True
        except OSError:
            return False

    def threads(self) -> list[int]:
        """Every thread of every task of the group (v1 `tasks`, v2 `cgroup.threads`)."""
        name = "cgroup.threads" if self.unified else "tasks"
        out: set[int] = set()
        for directory in self._unique_dirs():
            with contextlib.suppress(OSError, ValueError):
                out.update(int(p) for p in (directory / name).read_text().split())
        return sorted(out)

    def _set_cpus(self, cpus: str) -> bool:
        directory = self.dirs.get("unified" if self.unified else "cpuset")
        if directory is None or not (directory / "cpuset.cpus").exists():
            return False
        try:
            if not self.unified:
                (directory / "cpuset.mems").write_text(
                    (directory.parent / "cpuset.mems").read_text())
            (directory / "cpuset.cpus").write_text(cpus)
            return True
        except OSError:
            return False

    def procs_files(self) -> list[str]:
        """Files to write the child's pid into (from preexec, before exec)."""
        return [str(d / "cgroup.procs") for d in self._unique_dirs()]

    def _unique_dirs(self) -> list[Path]:
        return list(dict.fromkeys(self.dirs.values()))

    def _memory_dir(self) -> Path:
        return self.dirs["unified" if self.unified else "memory"]

    def peak_bytes(self) -> int:
        name = "memory.peak" if self.unified else "memory.max_usage_in_bytes"
        try:
            return int((self._memory_dir() / name).read_text())
        except (OSError, ValueError):
            return 0

    def mark_memory(self) -> int:
        """Memory in use now, in bytes; the peak restarts from here where the host allows."""
        return mark_memory(self._memory_dir())

    def oom_killed(self) -> bool:
        try:
            if self.unified:
                events = (self._memory_dir() / "memory.events").read_text()
                fields = dict(line.split() for line in events.splitlines())
                return int(fields.get("oom_kill", 0)) > 0 or int(fields.get("max", 0)) > 0
            control = (self._memory_dir() / "memory.oom_control").read_text()
            fields = dict(line.split() for line in control.splitlines())
            return int(fields.get("oom_kill", 0)) > 0 or int(
                (self._memory_dir() / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def freeze(self, frozen: bool) -> bool:
        """Stop (or resume) every process of the run; True once the kernel says it is done."""
        directory = self.dirs.get("unified" if self.unified else "freezer")
        return directory is not None and freeze_dir(directory, frozen)

    def start_freeze(self, frozen: bool = True) -> bool:
        """Ask for the run to be frozen or thawed, without waiting (`freeze` waits)."""
        directory = self.dirs.get("unified" if self.unified else "freezer")
        return directory is not None and start_freeze(directory, frozen)

    def cpu_ns(self) -> int | None:
        """CPU time its tasks have used, in nanoseconds (None where not accounted)."""
        directory = self.dirs.get("unified" if self.unified else "cpuacct")
        return None if directory is None else cpu_usage_ns(directory)

    def pids(self) -> list[int]:
        out: set[int] = set()
        for directory in self._unique_dirs():
            with contextlib.suppress(OSError, ValueError):
                out.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
        return sorted(out)

    def kill_all(self) -> None:
        for _ in range(20):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for directory in self._unique_dirs():
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def run_groups() -> list[Path]:
    """Every run group on this host, in every hierarchy (a v1 group is one directory in each)."""
    return sorted({*ROOT.glob(f"*/{PARENT}/run-*"), *ROOT.glob(f"{PARENT}/run-*")})


def owner(directory: Path) -> int | None:
    """The pid of the judge that made a run group (None: a name without one)."""
    _, pid, rest = directory.name.split("-", 2) if directory.name.count("-") >= 2 else ("", "", "")
    return int(pid) if pid.isdigit() and rest else None


def remove_orphans() -> int:
    """Run groups whose judge died before it removed them (killed mid-judging, or with a warm
    slot waiting) and that hold no process: removed, as nothing else would (each keeps its
    limits' bookkeeping in the kernel). A live judge's group, empty for a moment, is its own.
    Returns how many directories were removed."""
    removed = 0
    for directory in run_groups():
        pid = owner(directory)
        if pid is None or Path(f"/proc/{pid}").exists():
            continue
        with contextlib.suppress(OSError):  # a process still in it, or removed meanwhile
            directory.rmdir()
            removed += 1
    return removed


def cpu_usage_ns(directory: Path) -> int | None:
    """A cgroup's CPU time (v1 `cpuacct.usage`, v2 `cpu.stat`), exact while its tasks are frozen."""
    try:
        if (directory / "cpuacct.usage").is_file():
            return int((directory / "cpuacct.usage").read_text())
        for line in (directory / "cpu.stat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "usage_usec":
                return int(value) * 1000
    except (OSError, ValueError):
        pass
    return None


def mark_memory(directory: Path) -> int:
    """A memory cgroup's usage now (v2 `memory.current`, v1 `memory.usage_in_bytes`), in bytes,
    and its peak reset to it (v1: any write to `memory.max_usage_in_bytes`; v2 kernels from 6.12
    take a write to `memory.peak`; older ones keep their peak, so a growth is overstated)."""
    for usage, peak in (("memory.current", "memory.peak"),
                        ("memory.usage_in_bytes", "memory.max_usage_in_bytes")):
        try:
            now = int((directory / usage).read_text())
        except (OSError, ValueError):
            continue
        with contextlib.suppress(OSError):
            (directory / peak).write_text("0")
        return now
    return 0


_FREEZERS: dict[Path, bool] = {}  # a cgroup found to have a freezer: whether it is v2's


def _freezer(directory: Path, frozen: bool) -> tuple[Path, Path, str, str] | None:
    """(control file, status file, value to write, status wanted) of a cgroup's freezer. Looked
    up once per cgroup: a turn's freeze is asked for on the reply's path, where every system
    call is time a thread the run left working gets."""
    unified = _FREEZERS.get(directory)
    if unified is None:
        if (directory / "cgroup.freeze").is_file():
            unified = True
        elif (directory / "freezer.state").is_file():
            unified = False
        else:
            return None
        if len(_FREEZERS) > 4096:  # cgroups come and go with the runs
            _FREEZERS.clear()
        _FREEZERS[directory] = unified
    if unified:
        value = str(int(frozen))
        return directory / "cgroup.freeze", directory / "cgroup.events", value, f"frozen {value}"
    value = "FROZEN" if frozen else "THAWED"
    return directory / "freezer.state", directory / "freezer.state", value, value


def start_freeze(directory: Path, frozen: bool = True) -> bool:
    """Ask the kernel to freeze or thaw a cgroup, without waiting for it (freeze_dir waits)."""
    freezer = _freezer(directory, frozen)
    if freezer is None:
        return False
    try:
        descriptor = os.open(freezer[0], os.O_WRONLY)
        try:
            os.write(descriptor, freezer[2].encode())
        finally:
            os.close(descriptor)
        return True
    except OSError:
        return False


def freeze_dir(directory: Path, frozen: bool, timeout_s: float = 5.0) -> bool:
    """Freeze or thaw a cgroup (v2 `cgroup.freeze`, v1 `freezer.state`), waiting until the
    kernel reports it done; False where the group has no freezer or it did not finish."""
    freezer = _freezer(directory, frozen)
    if freezer is None:
        return False
    control, status, value, wanted = freezer
    try:
        control.write_text(value)
        started = written = time.monotonic()
        while wanted not in status.read_text():
            now = time.monotonic()
            if now > started + timeout_s:
                return False
            if now > written + 0.02:
                # v1 may stay FREEZING when a task could not be stopped at that moment (one in
                # the middle of a fork or an uninterruptible wait); writing again is the
                # documented retry (cgroup-v1/freezer-subsystem)
                control.write_text(value)
                written = now
            time.sleep(0.0002)
        return True
    except OSError:
        return False
