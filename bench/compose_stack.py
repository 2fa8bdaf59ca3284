"""The deployment files run (issue 15), written between markers in BENCHMARKS.md with --write.

Builds the images without a registry (deploy/local-images.sh: a debootstrap base imported into
Docker, the service image from deploy/Dockerfile on it), starts deploy/compose.yaml with
deploy/compose.local.yaml through a real engine (Debian's docker-compose): PostgreSQL, Redis,
the API and the CPU worker; submits vector_add's AC solution and waits for its verdict; stops
the stack and removes its volumes. Times each step.

    python bench/compose_stack.py [--write]

Needs root, dockerd, debootstrap and docker-compose (apt: debootstrap docker-compose). The GPU
worker is not started: it needs an NVIDIA device request (see deploy/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.benchmarks_md import report_section  # noqa: E402
from tests.server.stack import free_port, wait_for  # noqa: E402

AC = (ROOT / "problems/vector_add/solutions/AC/loop.cpp").read_text()
PROJECT = "kjudgelocal"


def compose_env(port: int) -> dict:
    return {**os.environ, "KJUDGE_IMAGE": "kjudge:local", "KJUDGE_PORT": str(port),
            "KJUDGE_POSTGRES_IMAGE": "kjudge-base:bookworm",
            "KJUDGE_REDIS_IMAGE": "kjudge-base:bookworm"}


def compose(env: dict, *args: str, timeout: float = 600) -> str:
    argv = ["docker-compose", "-p", PROJECT, "-f", "deploy/compose.yaml", "-f",
            "deploy/compose.local.yaml", *args]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def timed(what: str, times: dict, fn):
    started = time.monotonic()
    value = fn()
    times[what] = time.monotonic() - started
    print(f"{what}: {times[what]:.0f} s", flush=True)
    return value


def run() -> tuple[dict, dict]:
    missing = [t for t in ("docker", "docker-compose", "debootstrap") if not shutil.which(t)]
    if missing:
        raise SystemExit(f"needs {', '.join(missing)} (apt-get install debootstrap "
                         "docker-compose docker.io)")
    times: dict[str, float] = {}
    base_made = subprocess.run(["docker", "image", "inspect", "kjudge-base:bookworm"],
                               capture_output=True).returncode != 0
    timed("images", times, lambda: subprocess.run(["bash", "deploy/local-images.sh"], cwd=ROOT,
                                                  check=True))
    port = free_port()
    env = compose_env(port)
    url = f"http://127.0.0.1:{port}"
    compose(env, "down", "-v")  # a killed run's leftovers
    record: dict = {}
    try:
        timed("up", times, lambda: compose(env, "up", "-d", "api", "worker-cpu"))
        timed("API healthy", times, lambda: wait_for(lambda: _healthy(url), 180, "the API"))
        token = wait_for(lambda: compose(env, "exec", "-T", "api", "cat",
                                         "/var/lib/kjudge/admin-token").strip(), 60,
                         "the admin token")
        headers = {"Authorization": f"Bearer {token}"}

        def judged() -> dict:
            sid = httpx.post(url + "/api/submissions", headers=headers, timeout=30, json={
                "problem": "vector_add", "language": "cpp", "source": AC}).json()["id"]
            return wait_for(lambda: (r := httpx.get(f"{url}/api/submissions/{sid}",
                                                    headers=headers, timeout=30).json())
                            and r["state"] == "DONE" and r, 600, "the verdict")
        record = timed("submit → verdict", times, judged)
        services = compose(env, "ps", "--services", "--filter", "status=running").split()
    finally:
        logs = compose(env, "logs", "--no-color", "--tail", "40")
        if record.get("verdict") != "AC":
            print(logs)
        timed("down", times, lambda: compose(env, "down", "-v"))
    if record.get("verdict") != "AC":
        raise SystemExit(f"the submission was judged {record.get('verdict')}: "
                         f"{json.dumps(record)[:2000]}")
    return times, {"record": record, "services": sorted(services), "base_made": base_made}


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/api/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    times, seen = run()
    record = seen["record"]
    images = (f"{times['images']:.0f} s (debootstrap of the base included)" if seen["base_made"]
              else f"{times['images']:.0f} s (base already made; wheels and the service image)")
    block = "\n".join([
        f"`python bench/compose_stack.py` ({datetime.now(timezone.utc):%Y-%m-%d}, 2-core VM, "
        f"Docker {_docker_version()}, Debian's docker-compose {_compose_version()}):",
        "",
        "| step | seconds |",
        "| --- | --- |",
        f"| images: deploy/local-images.sh | {images} |",
        f"| `up -d api worker-cpu` ({', '.join(seen['services'])} running) | "
        f"{times['up']:.0f} |",
        f"| API healthy | {times['API healthy']:.0f} |",
        f"| vector_add AC submitted → verdict {record['verdict']} (worker "
        f"`{record.get('worker')}`, sandbox {record.get('sandbox')}) | "
        f"{times['submit → verdict']:.0f} |",
        f"| `down -v` | {times['down']:.0f} |",
    ])
    report_section("compose", "The deployment files run (issue 15)", block, args.write)


def _docker_version() -> str:
    return subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                          capture_output=True, text=True).stdout.strip()


def _compose_version() -> str:
    out = subprocess.run(["docker-compose", "version", "--short"], capture_output=True,
                         text=True).stdout.strip()
    return out or "?"


if __name__ == "__main__":
    main()
