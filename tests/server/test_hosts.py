"""Several hosts on one machine (deploy/hosts.sh: network namespaces on a bridge): the API,
PostgreSQL and Redis on one host, reachable only over that network, two worker hosts with their
own names, data folders and caches. Submissions are judged end to end; then one worker host's
cable is pulled in the middle of a judging: the other worker takes the judging over and it ends
with one current result; once the cable is back, the cut-off worker's late result is refused
(claim token) and it goes on judging."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import PROBLEMS, ROOT
from tests.server.stack import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.long]  # about a minute beside other tests
SCRIPT = ROOT / "deploy" / "hosts.sh"
NET = "10.77.0"
API = f"http://{NET}.1:8000"
AC = (PROBLEMS / "vector_add/solutions/AC/loop.cpp").read_text()
SLOW = "import time\nimport torch\n\ndef run_kernel(a, b, c, n):\n" \
       "    time.sleep(0.8)\n    torch.add(a, b, out=c)\n"

missing = [tool for tool in ("ip", "unshare", "redis-server") if not shutil.which(tool)]
if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
    missing.append("PostgreSQL's initdb")
if os.geteuid() != 0:
    missing.append("root")
if missing and os.environ.get("CI"):
    raise RuntimeError(f"the multi-host test needs {', '.join(missing)}")


class Hosts:
    def __init__(self, folder: Path):
        self.dir = folder
        self.env = {**os.environ, "KJ_HOSTS_PREFIX": "kjt", "KJ_HOSTS_DIR": str(folder),
                    "KJ_HOSTS_NET": NET, "KJUDGE": str(Path(os.sys.executable).with_name("kjudge")),
                    "KJUDGE_PROBLEMS": str(PROBLEMS), "KJUDGE_STALE_AFTER_S": "6",
                    "KJUDGE_QUEUE_PREFIX": "hosts", "PYTHONUNBUFFERED": "1"}
        for name in ("KJUDGE_DATABASE_URL", "KJUDGE_BROKER_URL", "KJUDGE_DATA_DIR"):
            self.env.pop(name, None)

    def run(self, *args: str, timeout: float = 180) -> None:
        done = subprocess.run(["bash", str(SCRIPT), *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        assert done.returncode == 0, f"hosts.sh {' '.join(args)}:\n{done.stdout}{done.stderr}"

    def log(self, name: str) -> str:
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
                         for p in sorted(self.dir.glob("*.log")))


@pytest.fixture
def hosts():
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    folder = Path(tempfile.mkdtemp(prefix="kjudge-hosts-"))
    made = Hosts(folder)
    made.run("down")  # a killed run's leftovers
    made.run("up")
    try:
        yield made
    finally:
        made.run("down")
        print(made.logs())
        shutil.rmtree(folder, ignore_errors=True)


def call(method: str, path: str, token: str, **kw) -> httpx.Response:
    return httpx.request(method, API + path, headers={"Authorization": f"Bearer {token}"},
                         timeout=30, **kw)


def submit(token: str, source: str, language: str = "cpp") -> int:
    response = call("POST", "/api/submissions", token,
                    json={"problem": "vector_add", "language": language, "source": source})
    assert response.status_code == 202, response.text
    return response.json()["id"]


def judgings(admin: str, sid: int) -> list[dict]:
    return call("GET", f"/api/submissions/{sid}/judgings", admin).json()


def judged(admin: str, sid: int, timeout: float = 240) -> dict:
    def done():
        history = judgings(admin, sid)
        return history[-1] if history and history[-1]["state"] == "DONE" else None
    return wait_for(done, timeout, f"the verdict of submission {sid}")


def test_two_worker_hosts_and_a_cable_pulled_mid_judging(hosts):
    hosts.run("db")
    hosts.run("api")
    admin = (hosts.dir / "api" / "data" / "admin-token").read_text().strip()
    hosts.run("worker", "w1", "11")
    first = judged(admin, submit(admin, AC))
    assert first["verdict"] == "AC" and first["worker"].startswith("w1:"), first

    # a judging on w1; w2 starts idle; w1's cable is pulled while it runs
    sid = submit(admin, SLOW, language="torch")
    wait_for(lambda: judgings(admin, sid)[-1]["state"] == "RUNNING", 120, "w1 to run it")
    hosts.run("worker", "w2", "12")
    wait_for(lambda: "ready" in hosts.log("w2"), 120, "w2 to start")
    hosts.run("cut", "w1")
    try:
        # w1 stops beating: the janitor gives the judging back and w2 takes it
        wait_for(lambda: (judgings(admin, sid)[-1]["worker"] or "").startswith("w2:"), 120,
                 "w2 to take the judging over")
    finally:
        hosts.run("mend", "w1")  # while w1 may still be judging: its late result must bounce
    taken = judged(admin, sid)
    assert taken["verdict"] == "AC" and taken["worker"].startswith("w2:"), taken
    wait_for(lambda: "'claim lost'" in hosts.log("w1"), 180, "w1's late result to be refused")
    history = judgings(admin, sid)
    assert len(history) == 1 and history[0]["attempts"] == 2, history  # one judging, two claims
    record = call("GET", f"/api/submissions/{sid}", admin).json()
    assert record["verdict"] == "AC" and record["worker"].startswith("w2:")

    # w1 goes on taking work: with w2 stopped, the next submission is judged there
    hosts.run("stop", "w2")
    wait_for(lambda: "Warm shutdown" in hosts.log("w2") or "exited" in hosts.log("w2"), 60,
             "w2 to stop")
    after = judged(admin, submit(admin, AC))
    assert after["verdict"] == "AC" and after["worker"].startswith("w1:"), after
    # each worker host kept its own compile cache
    assert any((hosts.dir / "w1" / "cache").rglob("*")), "w1 compiled nothing into its cache"
