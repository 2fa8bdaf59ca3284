"""End to end with real processes: `kjudge serve`, Celery workers, a Redis server of our own
(so that it can be restarted), the embedded broker, SIGKILLed workers."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from tests.conftest import PROBLEMS, ROOT
from tests.server.stack import Stack, wait_for

pytestmark = pytest.mark.slow
AC = PROBLEMS / "vector_add/solutions/AC/loop.cpp"
WA = PROBLEMS / "vector_add/solutions/WA/off_by_one.cpp"
SLOW_AC = "import time\nimport torch\n\ndef run_kernel(a, b, c, n):\n" \
          "    time.sleep(0.4)\n    torch.add(a, b, out=c)\n"


@pytest.fixture
def stack_factory(tmp_path):
    stacks = []

    def make(database_url=None, broker="redis") -> Stack:
        stack = Stack(tmp_path, database_url, broker)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()
        print(stack.logs())


@pytest.fixture(params=["sqlite", "postgresql"])
def e2e_database(request, tmp_path):
    if request.param == "sqlite":
        yield None
    else:
        from tests.server.conftest import _postgres_database
        yield from _postgres_database()


@pytest.mark.quiet  # a busy host may hold an honest timed result for review: off the board
def test_http_submit_through_redis_worker_to_leaderboard_and_rejudge(stack_factory,
                                                                     e2e_database):
    stack = stack_factory(e2e_database, broker="redis")
    stack.serve("--no-worker")
    stack.worker()
    alice, bob = stack.token_for("alice"), stack.token_for("bob")
    good = stack.submit(alice, AC.read_text())
    bad = stack.submit(bob, WA.read_text())
    assert stack.verdict(alice, good)["verdict"] == "AC"
    ran = wait_for(lambda: (record := stack.call("GET", f"/api/submissions/{good}",
                                                 stack.admin).json())
                   and "store" in record["phases"] and record, 30, "the store phase")
    assert {"queue_wait", "sandbox_start", "correctness", "timing", "store"} <= set(ran["phases"])
    assert ran["overhead_s"] > 0 and all(v >= 0 for v in ran["phases"].values())
    wrong = stack.verdict(bob, bad)
    assert wrong["verdict"] == "WA" and wrong["tests"][0]["mismatches"] == 1
    board = stack.call("GET", "/api/leaderboard", alice).json()
    assert [r["name"] for r in board["rows"]] == ["alice"] and board["me"]["rank"] == 1
    # a rejudge of the problem keeps the old judgings and the leaderboard follows the new ones
    rejudge = stack.call("POST", "/api/rejudge", stack.admin,
                         json={"problem": "vector_add", "reason": "new baseline"}).json()
    assert rejudge["total"] == 2
    wait_for(lambda: stack.call("GET", f"/api/rejudge/{rejudge['id']}", stack.admin)
             .json()["pending"] == 0, 180, "the rejudge")
    history = stack.call("GET", f"/api/submissions/{good}/judgings", alice).json()
    assert len(history) == 2 and all(h["verdict"] == "AC" for h in history)
    assert history[1]["rejudge_reason"] == "new baseline"
    board = stack.call("GET", "/api/leaderboard", alice).json()
    assert board["rows"][0]["total"] == pytest.approx(
        stack.verdict(alice, good)["score"])  # the current (rejudged) score


@pytest.mark.quiet  # its board must show a timed result (see above)
def test_embedded_broker_and_the_cli(stack_factory, tmp_path):
    stack = stack_factory(broker="embedded")
    stack.serve()  # with its embedded worker
    env = {**stack.env, "KJUDGE_SERVER": stack.url, "KJUDGE_TOKEN": stack.admin}
    out = subprocess.run([sys.executable, "-m", "judge.cli", "submit", "vector_add", str(AC),
                          "--wait", "--timeout", "180"], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr + stack.logs()
    assert "verdict AC" in out.stdout and "n1048576" in out.stdout
    # the record's own wall time and the submission's memory, labelled (not the harness's RSS)
    assert float(re.search(r"wall (\d+\.\d+) s", out.stdout).group(1)) > 0
    assert "MB (host memory, peak over the idle harness)" in out.stdout
    board = subprocess.run([sys.executable, "-m", "judge.cli", "leaderboard"], env=env,
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "admin" in board.stdout and "vector_add" in board.stdout
    bad = subprocess.run([sys.executable, "-m", "judge.cli", "submit", "nope", str(AC)], env=env,
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "no problem" in bad.stderr
    sid = out.stdout.split("submission ", 1)[1].split()[0]
    status = subprocess.run([sys.executable, "-m", "judge.cli", "status", sid, "--json"],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    record = json.loads(status.stdout)
    assert record["verdict"] == "AC" and "timing" in record["phases"]
    assert record["wall_s"] > 0 and record["memory_measure"]
    beside = subprocess.run([sys.executable, "-m", "judge.cli", "status", sid, "--compare", sid],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert beside.returncode == 0, beside.stderr
    assert f"| #{sid} speedup |" in beside.stdout and "| n1048576 | AC |" in beside.stdout
    csv_file = tmp_path / "mine.csv"
    saved = subprocess.run([sys.executable, "-m", "judge.cli", "status", sid, "--csv", csv_file],
                           env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert saved.returncode == 0 and csv_file.read_text().startswith("schema_version,")
    # an organizer's sanction and the audit log, from the command line
    def kjudge(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "judge.cli", *args], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    # a test submission: the sample point only, correctness only, counted nowhere
    tried = kjudge("submit", "vector_add", str(AC), "--mode", "test", "--wait", "--timeout",
                   "55")
    assert tried.returncode == 0, tried.stdout + tried.stderr
    assert "(test)" in tried.stdout and "a test submission: its sample points only" in tried.stdout
    assert "tiny" in tried.stdout and "n1048576" not in tried.stdout
    ignored = kjudge("sanction", "ignore", sid, "--reason", "a test of the CLI")
    assert ignored.returncode == 0, ignored.stderr
    assert f"ignore submission {sid}: a test of the CLI" in ignored.stdout
    number = ignored.stdout.split()[1].rstrip(":")
    assert f"sanction {number}: ignore" in kjudge("sanction", "list").stdout
    assert "admin" not in kjudge("leaderboard").stdout  # it counts nowhere now
    lifted = kjudge("sanction", "lift", number, "--reason", "done")
    assert lifted.returncode == 0 and "(lifted " in lifted.stdout, lifted.stderr
    assert kjudge("sanction", "list").stdout.strip() == "no sanctions"
    logged = kjudge("audit", "--action", "sanction").stdout.splitlines()
    assert [line.split()[2] for line in logged] == ["sanction.lift", "sanction.ignore"]
    # a contest's CCS event feed, saved for the ICPC resolver's contest folder
    assert stack.call("POST", "/api/contests", stack.admin, json={
        "slug": "feed", "title": "Feed", "problems": ["vector_add"]}).status_code == 201
    feed = kjudge("export", "--format", "event-feed", "--contest", "feed")
    assert feed.returncode == 0, feed.stderr
    assert [json.loads(line)["type"] for line in feed.stdout.splitlines()][:2] == [
        "contest", "judgement-types"]
    export = subprocess.run([sys.executable, "-m", "judge.cli", "export", "--format", "csv"],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert export.returncode == 0 and "vector_add" in export.stdout
    # the whole database, loaded into a new one, gives the same leaderboard
    whole = subprocess.run([sys.executable, "-m", "judge.cli", "export", "--format", "dump"],
                           env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    (tmp_path / "dump.json").write_text(whole.stdout)
    moved = {**env, "KJUDGE_DATABASE_URL": f"sqlite:///{tmp_path}/moved.db"}
    loaded = subprocess.run([sys.executable, "-m", "judge.cli", "db", "import",
                             str(tmp_path / "dump.json")], env=moved, cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0 and "2 submissions" in loaded.stdout, loaded.stderr
    again = subprocess.run([sys.executable, "-m", "judge.cli", "db", "import",
                            str(tmp_path / "dump.json")], env=moved, cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode != 0 and "not empty" in again.stderr
    from judge.service import boards, db
    with db.session(moved["KJUDGE_DATABASE_URL"]) as s:
        assert boards.results(s).board["rows"] == stack.call(
            "GET", "/api/leaderboard", stack.admin).json()["rows"]


def test_worker_killed_mid_judging_finishes_exactly_once(stack_factory):
    stack = stack_factory(broker="redis")
    stack.serve("--no-worker")
    first = stack.worker()
    alice = stack.token_for("alice")
    sid = stack.submit(alice, SLOW_AC, language="torch")
    wait_for(lambda: stack.call("GET", f"/api/submissions/{sid}", alice).json()["state"]
             == "RUNNING", 120, "the judging to run")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    stack.worker()
    record = stack.verdict(alice, sid, timeout=240)
    assert record["verdict"] == "AC", stack.logs()
    history = stack.call("GET", f"/api/submissions/{sid}/judgings", stack.admin).json()
    assert len(history) == 1 and history[0]["attempts"] == 2  # one judging, claimed twice


def test_redis_restart_loses_no_queued_submission(stack_factory):
    stack = stack_factory(broker="redis")
    stack.serve("--no-worker")
    alice = stack.token_for("alice")
    sids = [stack.submit(alice, AC.read_text()) for _ in range(3)]
    stack.stop_redis()  # Redis keeps nothing on disk here: the queue is gone
    stack.start_redis()
    stack.worker()
    for sid in sids:
        assert stack.verdict(alice, sid, timeout=240)["verdict"] == "AC", stack.logs()


def test_nothing_is_lost_while_the_broker_is_down(stack_factory):
    stack = stack_factory(broker="redis")
    stack.serve("--no-worker")
    alice = stack.token_for("alice")
    stack.stop_redis()
    sid = stack.submit(alice, AC.read_text())  # accepted and stored although unpublishable
    stack.start_redis()
    stack.worker()
    assert stack.verdict(alice, sid, timeout=240)["verdict"] == "AC", stack.logs()
