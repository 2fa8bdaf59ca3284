"""End to end with real processes: `kjudge serve`, Celery workers, a Redis server of our own
(so that it can be restarted), the embedded broker, SIGKILLed workers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import PROBLEMS, ROOT

pytestmark = pytest.mark.slow
AC = PROBLEMS / "vector_add/solutions/AC/loop.cpp"
WA = PROBLEMS / "vector_add/solutions/WA/off_by_one.cpp"
SLOW_AC = "import time\nimport torch\n\ndef run_kernel(a, b, c, n):\n" \
          "    time.sleep(0.4)\n    torch.add(a, b, out=c)\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


class Stack:
    """One judge deployment on this machine, torn down by the fixture."""

    def __init__(self, tmp: Path, database_url: str | None, broker: str):
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.redis_port = free_port()
        self.redis: subprocess.Popen | None = None
        self.procs: list[subprocess.Popen] = []
        self.env = {**os.environ, "KJUDGE_DATA_DIR": str(tmp / "data"),
                    "KJUDGE_PROBLEMS": str(PROBLEMS), "KJUDGE_STALE_AFTER_S": "6",
                    "KJUDGE_QUEUE_PREFIX": f"e2e{self.port}", "PYTHONUNBUFFERED": "1"}
        if database_url:
            self.env["KJUDGE_DATABASE_URL"] = database_url
        if broker == "redis":
            self.start_redis()
            self.env["KJUDGE_BROKER_URL"] = f"redis://127.0.0.1:{self.redis_port}/0"
        else:
            self.env.pop("KJUDGE_BROKER_URL", None)

    def start_redis(self) -> None:
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: _connects(self.redis_port), 10, "redis")

    def stop_redis(self) -> None:
        self.redis.kill()
        self.redis.wait()

    def spawn(self, *args: str, log: str) -> subprocess.Popen:
        out = open(self.tmp / log, "ab")  # noqa: SIM115 - kept open for the child
        proc = subprocess.Popen([sys.executable, "-m", "judge.cli", *args], env=self.env,
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def serve(self, *extra: str) -> None:
        self.spawn("serve", "--port", str(self.port), "--quiet", *extra, log="serve.log")
        wait_for(self._healthy, 60, "the API")
        token_file = self.tmp / "data" / "admin-token"
        self.admin = wait_for(lambda: token_file.is_file() and token_file.read_text().strip(),
                              10, "the admin token")

    def worker(self) -> subprocess.Popen:
        return self.spawn("worker", "--device", "cpu", log="worker.log")

    def _healthy(self) -> bool:
        try:
            return httpx.get(self.url + "/api/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def token_for(self, name: str) -> str:
        response = httpx.post(self.url + "/api/users", json={"name": name},
                              headers={"Authorization": f"Bearer {self.admin}"})
        return response.json()["token"]

    def call(self, method: str, path: str, token: str, **kw) -> httpx.Response:
        return httpx.request(method, self.url + path, headers={"Authorization": f"Bearer {token}"},
                             timeout=30, **kw)

    def submit(self, token: str, source: str, language: str = "cpp") -> int:
        response = self.call("POST", "/api/submissions", token, json={
            "problem": "vector_add", "language": language, "source": source})
        assert response.status_code == 202, response.text
        return response.json()["id"]

    def verdict(self, token: str, sid: int, timeout: float = 120) -> dict:
        def done():
            record = self.call("GET", f"/api/submissions/{sid}", token).json()
            return record if record["state"] == "DONE" and record["verdict"] else None
        return wait_for(done, timeout, f"the verdict of submission {sid}")

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        if self.redis and self.redis.poll() is None:
            self.stop_redis()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in self.tmp.glob("*.log"))


def _connects(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


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


def test_http_submit_through_redis_worker_to_leaderboard_and_rejudge(stack_factory,
                                                                     e2e_database):
    stack = stack_factory(e2e_database, broker="redis")
    stack.serve("--no-worker")
    stack.worker()
    alice, bob = stack.token_for("alice"), stack.token_for("bob")
    good = stack.submit(alice, AC.read_text())
    bad = stack.submit(bob, WA.read_text())
    assert stack.verdict(alice, good)["verdict"] == "AC"
    wrong = stack.verdict(bob, bad)
    assert wrong["verdict"] == "WA" and wrong["tests"][0]["mismatches"] == 1
    board = stack.call("GET", "/api/leaderboard", alice).json()
    assert [r["user"] for r in board["rows"]] == ["alice"] and board["me"]["rank"] == 1
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


def test_embedded_broker_and_the_cli(stack_factory, tmp_path):
    stack = stack_factory(broker="embedded")
    stack.serve()  # with its embedded worker
    env = {**stack.env, "KJUDGE_SERVER": stack.url, "KJUDGE_TOKEN": stack.admin}
    out = subprocess.run([sys.executable, "-m", "judge.cli", "submit", "vector_add", str(AC),
                          "--wait", "--timeout", "180"], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr + stack.logs()
    assert "verdict AC" in out.stdout and "n1048576" in out.stdout
    board = subprocess.run([sys.executable, "-m", "judge.cli", "leaderboard"], env=env,
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "admin" in board.stdout and "vector_add" in board.stdout
    bad = subprocess.run([sys.executable, "-m", "judge.cli", "submit", "nope", str(AC)], env=env,
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "no problem" in bad.stderr


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
