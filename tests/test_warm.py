"""Warm slots: the next judging's harnesses started ahead, never shared between judgings."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from judge.judging.pipeline import JudgeOptions, judge_source
from judge.judging.warm import UNTIMED, Slot, SlotPool, startup_env
from judge.verdicts import Verdict
from sandbox import SandboxLimits
from tests.conftest import make_sandbox

FAST = JudgeOptions(timing=False)
MARK = "kjudge-left-behind"

# Leaves all it can behind: files wherever it may write, and a process that outlives the call.
LEAVER = f'''
import os, subprocess, sys
import torch

MARK = "{MARK}"
written = []
for folder in ("/tmp", "/dev/shm", os.getcwd(), os.environ.get("HOME", "/tmp"),
               os.environ.get("TMPDIR", "/tmp")):
    try:
        with open(os.path.join(folder, MARK), "w") as f:
            f.write("state of an earlier judging")
        written.append(folder)
    except OSError:
        pass
assert written, "the leaver could write nowhere"
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARK],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
'''

# Looks for that state: files near and far, processes; fails to load (RE) with what it found.
SEEKER = f'''
import os
import torch

MARK = "{MARK}"
found = []
folders = {{"/tmp", "/dev/shm", os.getcwd(), os.environ.get("HOME", "/tmp"),
           os.environ.get("TMPDIR", "/tmp")}}
here = os.getcwd()
for _ in range(4):  # and every folder up the job directory, and beside it
    here = os.path.dirname(here)
    folders.add(here)
for folder in folders:
    for root, dirs, files in os.walk(folder):
        found += [os.path.join(root, f) for f in files if f == MARK]
        if root.count(os.sep) - folder.count(os.sep) >= 4:
            dirs[:] = []
for pid in os.listdir("/proc"):
    try:
        with open(f"/proc/{{pid}}/cmdline", "rb") as f:
            if MARK.encode() in f.read():
                found.append(f"process {{pid}}")
    except OSError:
        pass
if found:
    raise RuntimeError(f"state of an earlier judging found: {{found}}")


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
'''


def _judge(problem, source, cpu, sandbox, **options):
    return judge_source(problem, source, language="torch", device=cpu, sandbox=sandbox,
                        options=JudgeOptions(timing=False, **options))


def test_the_seeker_finds_state_where_nothing_isolates_judgings(vector_add, cpu):
    """The control: under the process backend (no file isolation) the seeker finds the file the
    leaver left in the host's /tmp, so its silence elsewhere means something."""
    sandbox = make_sandbox("process")
    try:
        assert _judge(vector_add, LEAVER, cpu, sandbox).verdict is Verdict.AC
        found = _judge(vector_add, SEEKER, cpu, sandbox)
        assert found.verdict is Verdict.RE and "state of an earlier judging found" in \
            found.message, found.message
    finally:
        for folder in ("/tmp", "/dev/shm"):
            Path(folder, MARK).unlink(missing_ok=True)


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_a_judging_never_sees_what_the_last_one_left_behind(vector_add, cpu, backend):
    """Two judgings in a row from one worker's pool (the second's slot warms up while the first
    runs): files and processes the first leaves are nowhere the second can look."""
    sandbox = make_sandbox(backend)
    pool = SlotPool(sandbox)
    try:
        pool.prepare(startup_env(sandbox, cpu))
        left = _judge(vector_add, LEAVER, cpu, sandbox, pool=pool)
        assert left.verdict is Verdict.AC and left.applied["warm_start"], left.message
        seen = _judge(vector_add, SEEKER, cpu, sandbox, pool=pool)
        assert seen.verdict is Verdict.AC and seen.applied["warm_start"], seen.message
    finally:
        pool.close()


def test_an_untimed_judging_starts_no_baseline_and_a_timed_one_takes_no_slot_without(vector_add,
                                                                                    cpu):
    """An untimed judging (a validation's self-tests, an import's) needs the submission's
    harness alone: a baseline's interpreter and torch import would be started for nothing. A
    timed judging never takes a slot that lacks the baseline's."""
    sandbox = make_sandbox("bwrap")
    pool = SlotPool(sandbox, UNTIMED)
    try:
        pool.prepare(startup_env(sandbox, cpu))
        pool._join()
        assert set(pool._next.harnesses) == {"submission"}
        untimed = _judge(vector_add, LEAVER, cpu, sandbox, pool=pool)
        assert untimed.verdict is Verdict.AC and untimed.applied["warm_start"], untimed.message
        timed = judge_source(vector_add, LEAVER, language="torch", device=cpu, sandbox=sandbox,
                             options=JudgeOptions(tests=["tiny"], pool=pool))
        assert timed.verdict is Verdict.AC and timed.tests[0].time_ms, timed.message
        assert not timed.applied["warm_start"]  # started for it, with the baseline's harness
    finally:
        pool.close()


def test_a_pool_warms_no_slot_behind_its_last_judging(vector_add, cpu):
    """A validation knows its last judging: the slot warmed behind it would be two interpreters
    and torch imports that nobody takes."""
    sandbox = make_sandbox("bwrap")
    pool = SlotPool(sandbox)
    try:
        pool.prepare(startup_env(sandbox, cpu))
        first = _judge(vector_add, LEAVER, cpu, sandbox, pool=pool)
        assert first.applied["warm_start"] and pool._next is not None  # the next one waits
        pool.ending()
        last = _judge(vector_add, LEAVER, cpu, sandbox, pool=pool)
        assert last.verdict is Verdict.AC and last.applied["warm_start"], last.message
        assert pool._next is None and pool._starting is None
    finally:
        pool.close()


def test_a_slot_serves_one_judging_and_is_gone_after_it(vector_add, cpu):
    sandbox = make_sandbox("bwrap")
    slot = Slot.start(sandbox, startup_env(sandbox, cpu))
    pids = [p for h in slot.harnesses.values() for p in h.proc.pids()]
    assert pids and slot.workdir.is_dir()
    result = _judge(vector_add, LEAVER, cpu, sandbox, slot=slot)
    assert result.verdict is Verdict.AC and result.applied["warm_start"]
    assert not slot.workdir.exists()  # the job directory, the leaver's files with it
    alive = [p for p in pids if Path(f"/proc/{p}").exists()
             and "Z" not in Path(f"/proc/{p}/stat").read_text().rpartition(")")[2][:3]]
    assert not alive, alive
    again = _judge(vector_add, LEAVER, cpu, sandbox, slot=slot)  # a used slot is not reused:
    assert again.verdict is Verdict.AC and not again.applied["warm_start"]  # a fresh one ran


def _freezer_state(slot: Slot) -> set[str]:
    return {(h.proc.cgroup.dirs["freezer"] / "freezer.state").read_text().strip()
            for h in slot.harnesses.values()}


@pytest.mark.skipif(not Path("/sys/fs/cgroup/freezer").is_dir(), reason="cgroup v1 freezer")
def test_the_waiting_slot_is_frozen_while_a_judging_times_and_idle_otherwise(cpu):
    sandbox = make_sandbox("bwrap")
    pool = SlotPool(sandbox)
    try:
        pool.prepare(startup_env(sandbox, cpu))
        waiting = pool._next
        policies = {os.sched_getscheduler(t) for h in waiting.harnesses.values()
                    for t in h.proc.cgroup.threads()}
        assert policies == {os.SCHED_IDLE}  # it takes only CPU time nothing else wants
        with pool.quiet():
            assert _freezer_state(waiting) == {"FROZEN"}
        assert _freezer_state(waiting) == {"THAWED"}
        taken = pool.take(startup_env(sandbox, cpu))
        assert taken is waiting and pool._next is not waiting  # the next one is on its way
        for h in taken.harnesses.values():  # its judging's limits bring it back to normal
            h.await_warm(60)
            h.proc.adjust(SandboxLimits())
            assert {os.sched_getscheduler(t) for t in h.proc.cgroup.threads()} == \
                {os.SCHED_OTHER}
        taken.close()
    finally:
        pool.close()


def test_a_warm_run_takes_its_judgings_memory_cap_and_cpus(cpu):
    """The slot starts under a default cap on every CPU; the judging's own cap is applied when it
    is taken, lower (MLE sooner: test_output_flood_is_ole_and_memory_bomb_is_mle) or higher, and
    its CPU set narrowed to the contenders' CPUs."""
    sandbox = make_sandbox("bwrap")
    slot = Slot.start(sandbox, startup_env(sandbox, cpu))
    try:
        proc = slot.harnesses["submission"].proc
        memory = proc.cgroup._memory_dir()
        cap = memory / ("memory.max" if proc.cgroup.unified else "memory.limit_in_bytes")
        for mb in (700, 9000, 2048):
            proc.adjust(SandboxLimits(memory_mb=mb, output_bytes=1234))
            assert int(cap.read_text()) == mb * 2**20
            assert proc.output_limit == 1234
        # and its CPUs: the cgroup's own set, which the run cannot leave by itself
        last = str(max(os.sched_getaffinity(0)))
        proc.adjust(SandboxLimits(cpus=last))
        assert proc.cgroup.cpus_applied
        cpuset = proc.cgroup.dirs["unified" if proc.cgroup.unified else "cpuset"]
        assert (cpuset / "cpuset.cpus").read_text().strip() == last
    finally:
        slot.close()


def test_a_dead_judges_job_directories_are_removed_and_a_live_ones_kept(tmp_path, monkeypatch):
    import subprocess

    from judge.judging import warm

    monkeypatch.setenv("KJUDGE_WORK_DIR", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f"{warm.JOB_PREFIX}{dead.pid}-abc"
    alive = tmp_path / f"{warm.JOB_PREFIX}{os.getpid()}-def"
    other = tmp_path / "someone-elses"
    for folder in (gone, alive, other):
        (folder / "inputs").mkdir(parents=True)
    assert warm.remove_leftovers() >= 1  # and any run cgroups other judges left on the host
    assert not gone.exists() and alive.exists() and other.exists()


ORPHANING_JUDGE = """
import subprocess, sys
from sandbox.cgroup import Cgroup
empty = Cgroup.create(256 << 20, 64)
busy = Cgroup.create(256 << 20, 64)
sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for path in busy.procs_files():
    open(path, "w").write(str(sleeper.pid))
print(sleeper.pid, *(str(d) for d in empty._unique_dirs()), sep="\\n")
print("busy", *(str(d) for d in busy._unique_dirs()), sep="\\n")
"""


def test_a_dead_judges_empty_cgroups_are_removed_and_a_live_ones_kept():
    """A judge killed before it removed its run cgroups (sandbox/cgroup.py) leaves them; the
    next judge removes those that are empty and whose judge is gone, not a live judge's, and
    not one a process is still in."""
    import subprocess
    import sys

    from sandbox import cgroup

    if not cgroup.Cgroup.probe().get("memory"):
        pytest.skip("no writable cgroups here")
    out = subprocess.run([sys.executable, "-c", ORPHANING_JUDGE], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).resolve().parents[1]).stdout
    sleeper, *dirs = out.split()
    busy_at = dirs.index("busy")
    empty, busy = [Path(d) for d in dirs[:busy_at]], [Path(d) for d in dirs[busy_at + 1:]]
    live = cgroup.Cgroup.create(256 << 20, 64)
    try:
        assert all(d.exists() for d in empty + busy)  # the judge died without removing them
        cgroup.remove_orphans()
        assert not any(d.exists() for d in empty)
        assert all(d.exists() for d in busy) and all(d.exists() for d in live._unique_dirs())
        os.kill(int(sleeper), 9)  # the last process in it gone: now it is an orphan too
        deadline = time.monotonic() + 10
        while any(d.exists() for d in busy) and time.monotonic() < deadline:
            cgroup.remove_orphans()
            time.sleep(0.1)
        assert not any(d.exists() for d in busy)
    finally:
        live.remove()


def test_gpu_contenders_keep_to_cpus_of_their_own_as_on_the_cpu_device(cpu):
    """The host side of a GPU call (launch, copies, synchronize) runs on the same cores for
    both contenders, away from the judge drawing the next inputs."""
    from judge.host.device import DeviceInfo
    from judge.judging.warm import contender_cpus

    h200 = DeviceInfo("cuda", "cuda:0", "NVIDIA H200", 60 * 2**20, "sm_90a")
    assert contender_cpus(h200) == contender_cpus(cpu) is not None
