"""A judge deployment of real processes on this machine, for end-to-end tests and benchmarks:
`kjudge serve`, Celery workers, and a Redis server of its own (so it can be restarted)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "problems"


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


class PrivatePostgres:
    """A PostgreSQL server of its own (initdb in a folder, its own port), so that it can be
    restarted without touching the machine's. Run as the `postgres` user when this is root
    (PostgreSQL refuses root)."""

    def __init__(self):
        import shutil
        import tempfile

        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        if not bins:
            raise RuntimeError("PostgreSQL's server binaries (pg_ctl, initdb) are not installed")
        self.bin = bins[-1].parent
        self.port = free_port()
        # a folder the postgres user can reach (pytest's are root's, mode 700)
        self.dir = Path(tempfile.mkdtemp(prefix="kjudge-pg-", dir="/tmp"))
        self.dir.chmod(0o755)
        self.data = self.dir / "data"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.dir, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                  "kjudge", ctl=False)
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/kjudge"

    def _run(self, tool: str, *args: str, ctl: bool = True) -> None:
        argv = [str(self.bin / tool) if ctl else tool, *args]
        if self._as_postgres:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, cwd="/tmp")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.dir / "log"), "-o",
                  f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir}", "start")

    def stop(self, mode: str = "fast") -> None:
        """`immediate` is a crash (no shutdown checkpoint), `fast` a clean stop."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-m", mode, "stop")

    def close(self) -> None:
        import contextlib
        import shutil

        with contextlib.suppress(subprocess.CalledProcessError):  # already down
            self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


class Stack:
    """One judge deployment on this machine, torn down by the fixture."""

    def __init__(self, tmp: Path, database_url: str | None, broker: str,
                 extra_env: dict | None = None):
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.redis_port = free_port()
        self.redis: subprocess.Popen | None = None
        self.procs: list[subprocess.Popen] = []
        self.env = {**os.environ, "KJUDGE_DATA_DIR": str(tmp / "data"),
                    "KJUDGE_PROBLEMS": str(PROBLEMS), "KJUDGE_STALE_AFTER_S": "6",
                    "KJUDGE_QUEUE_PREFIX": f"e2e{self.port}", "PYTHONUNBUFFERED": "1",
                    **(extra_env or {})}
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
        wait_for(self.healthy, 60, "the API")
        token_file = self.tmp / "data" / "admin-token"
        self.admin = wait_for(lambda: token_file.is_file() and token_file.read_text().strip(),
                              10, "the admin token")

    def worker(self) -> subprocess.Popen:
        return self.spawn("worker", "--device", "cpu", log="worker.log")

    def healthy(self) -> bool:
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
        # to each command's own process, as `kill`, `docker stop` and the worker unit's
        # KillMode=mixed send it: a SIGTERM to the whole group also ends Celery's pool process
        # (it does not ignore SIGTERM), and its main process then hangs in the pool's join
        # until it is killed (20 s a stack here, every time a judging had run)
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
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
