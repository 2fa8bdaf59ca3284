"""Stopping is clean: `kjudge serve` takes its embedded workers with it (SIGTERM, Ctrl-C, even
SIGKILL), and `kjudge worker` stops the way deploy/kjudge-worker@.service tells systemd to stop
it. Every stop is a warm one: the judging running at the time is finished before the worker
leaves, and no process of the tree is left behind."""

from __future__ import annotations

import configparser
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.host import processes
from tests.conftest import ROOT
from tests.server.stack import Stack, wait_for

pytestmark = pytest.mark.slow
UNIT = ROOT / "deploy" / "kjudge-worker@.service"
# runs for a few seconds (10 timed calls of 0.3 s after the checks), then is judged
SLOW = "import time\nimport torch\n\ndef run_kernel(a, b, c, n):\n" \
       "    time.sleep(0.3)\n    torch.add(a, b, out=c)\n"


def alive(pids: set[int]) -> set[int]:
    """Those still running (zombies waiting for a reaper count as gone)."""
    return {pid for pid in pids if not processes.ended(pid)}


def left_behind(judges: set[int]) -> list[str]:
    """Run cgroups made by these processes (sandbox/cgroup.py names each with its judge's pid)
    that stay: none should, once they stopped (other tests' judges on the host have their own)."""
    from sandbox.cgroup import owner, run_groups

    def left() -> list[str]:
        return [str(c) for c in run_groups() if owner(c) in judges and c.exists()]

    deadline = time.monotonic() + 15
    while (found := left()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


def workers_started(stack: Stack, proc: subprocess.Popen) -> set[int]:
    """The serve process's tree once its worker judged something (so its pool and warm slots
    are up): more than the API process alone."""
    token = stack.token_for("warmup")
    stack.verdict(token, stack.submit(token, SLOW, language="torch"), timeout=180)
    return wait_for(lambda: len(found := processes.tree(proc.pid)) >= 3 and found, 30,
                    "the workers")


def stop_mid_judging(stack: Stack, stop) -> tuple[int, str]:
    """Submit SLOW, call `stop()` while it runs; the submission and the user's token."""
    alice = stack.token_for("alice")
    sid = stack.submit(alice, SLOW, language="torch")
    wait_for(lambda: stack.call("GET", f"/api/submissions/{sid}", alice).json()["state"]
             == "RUNNING", 120, "the judging to run")
    stop()
    return sid, alice


def judged_before_exit(stack: Stack, database_url: str, sid: int) -> None:
    """The judging that was running when the stop came was finished by the stopping worker
    (read from the database: the API is gone)."""
    from judge.service import db
    from judge.service.models import Submission
    from judge.service.submissions import latest_judging

    with db.session(database_url) as s:
        judging = latest_judging(s.get(Submission, sid))
        assert judging.state == "DONE" and judging.verdict == "AC", judging.record
        assert judging.attempts == 1


@pytest.fixture
def stack(tmp_path):
    made = Stack(tmp_path, f"sqlite:///{tmp_path}/kjudge.db", broker="embedded")
    yield made
    made.close()
    print(made.logs())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_serve_stops_its_workers_after_the_running_judging(stack, signum):
    stack.serve()
    proc = stack.procs[0]
    everything = workers_started(stack, proc)
    # the signal goes to serve alone (SIGINT as Ctrl-C would come from a terminal's group is
    # the easy case: every process gets it)
    sid, _ = stop_mid_judging(stack, lambda: proc.send_signal(signum))
    assert proc.wait(90) == 0, stack.logs()
    wait_for(lambda: not alive(everything), 20, "serve's workers to exit")
    judged_before_exit(stack, stack.env["KJUDGE_DATABASE_URL"], sid)
    # the warm slot started for the next judging is removed too: no cgroup is left behind
    leaked = left_behind(everything)
    assert not leaked, leaked


def test_a_sigkilled_serve_takes_its_workers_with_it(stack):
    stack.serve()
    proc = stack.procs[0]
    everything = workers_started(stack, proc)
    sid, _ = stop_mid_judging(stack, proc.kill)
    proc.wait(10)
    # the worker is told by the kernel (parent-death signal) and stops warm
    wait_for(lambda: not alive(everything), 90, "the orphaned workers to exit")
    judged_before_exit(stack, stack.env["KJUDGE_DATABASE_URL"], sid)


class SystemdService:
    """Start and stop deploy/kjudge-worker@.service's command as systemd does with what the
    unit declares: ExecStart with the instance name, EnvironmentFile, and on stop KillMode,
    KillSignal and TimeoutStopSec (systemd itself does not run on these machines). The
    service's control group is the process tree, recorded while it runs."""

    def __init__(self, unit: Path, instance: str, env_file: Path, env: dict, log: Path):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.optionxform = str
        parser.read_string(unit.read_text())
        self.service = parser["Service"]
        argv = shlex.split(self.service["ExecStart"].replace("%i", instance))
        assert argv[0].endswith("/kjudge"), argv
        self.argv = [sys.executable, "-m", "judge.cli", *argv[1:]]
        assert Path(self.service["EnvironmentFile"].lstrip("-")).name == "worker.env"
        self.env = {**env, **dict(line.split("=", 1) for line in
                                  env_file.read_text().splitlines() if "=" in line)}
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, env=self.env, cwd=ROOT, stdout=self.log.open("ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self, group: set[int]) -> float:
        """Seconds the stop took; fails if systemd would have had to SIGKILL anything."""
        kill_signal = getattr(signal, self.service.get("KillSignal", "SIGTERM"))
        mode = self.service.get("KillMode", "control-group")
        timeout = float(self.service.get("TimeoutStopSec", "90").removesuffix("s"))
        started = time.monotonic()
        for pid in ([self.proc.pid] if mode == "mixed" else alive(group)):
            os.kill(pid, kill_signal)
        deadline = started + min(timeout, 120)
        while alive(group) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(group), f"left for systemd's SIGKILL: {alive(group)}"
        return time.monotonic() - started


def test_the_systemd_unit_stops_a_worker_warm(stack, tmp_path):
    stack.serve("--no-worker")
    env_file = tmp_path / "worker.env"
    env_file.write_text(f"KJUDGE_DATABASE_URL={stack.env['KJUDGE_DATABASE_URL']}\n"
                        f"KJUDGE_DATA_DIR={stack.env['KJUDGE_DATA_DIR']}\n")
    service = SystemdService(UNIT, "cpu", env_file, stack.env, tmp_path / "worker.log")
    service.start()
    try:
        token = stack.token_for("warmup")
        stack.verdict(token, stack.submit(token, SLOW, language="torch"), timeout=180)
        group = wait_for(lambda: len(found := processes.tree(service.proc.pid)) >= 3 and found, 30,
                         "the worker's pool")
        sid, _ = stop_mid_judging(stack, lambda: None)
        group |= processes.tree(service.proc.pid)
        service.stop(group)
        assert service.proc.wait(5) == 0
        judged_before_exit(stack, stack.env["KJUDGE_DATABASE_URL"], sid)
    finally:
        if service.proc.poll() is None:
            os.killpg(service.proc.pid, signal.SIGKILL)


def test_a_second_signal_stops_cold_and_hands_the_judging_back(stack):
    from judge.service import db
    from judge.service.models import Submission
    from judge.service.submissions import latest_judging

    stack.serve()
    proc = stack.procs[0]
    everything = workers_started(stack, proc)

    def twice():
        proc.send_signal(signal.SIGINT)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
    sid, alice = stop_mid_judging(stack, twice)
    assert proc.wait(30) == 0, stack.logs()
    wait_for(lambda: not alive(everything), 20, "serve's workers to exit")
    with db.session(stack.env["KJUDGE_DATABASE_URL"]) as s:
        judging = latest_judging(s.get(Submission, sid))
        # queued again at once, not left claimed until the janitor misses its heartbeats
        assert judging.state == "QUEUED" and judging.claim is None, stack.logs()
    stack.procs.clear()
    stack.serve()
    assert stack.verdict(alice, sid, timeout=180)["verdict"] == "AC"
    history = stack.call("GET", f"/api/submissions/{sid}/judgings", stack.admin).json()
    assert len(history) == 1 and history[0]["attempts"] == 2  # one judging, claimed twice
