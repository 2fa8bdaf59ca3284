"""What signing in costs (issue 17), written between markers in BENCHMARKS.md with --write.

1. One argon2id check with the judge's parameters (judge/service/accounts.py), in this process.
2. `POST /api/session` (name and password) against a real `kjudge serve --no-worker` (uvicorn,
   SQLite), one request at a time: its latency.
3. The same from two threads at once: sign-ins per second, what a contest's start asks of an
   API process on this 2-core VM.
4. `POST /api/users/import` of 100 users without passwords (each generated and hashed).

    python bench/sign_in.py [--runs 40] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from tests.server.stack import Stack  # noqa: E402

PASSWORD = "a contestant's password"


def check_ms(runs: int) -> list[float]:
    from judge.service.accounts import HASHER

    stored = HASHER.hash(PASSWORD)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        HASHER.verify(stored, PASSWORD)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    import httpx

    checks = check_ms(args.runs)
    stack = Stack(Path(tempfile.mkdtemp(prefix="kjudge-sign-in-")), None, "embedded")
    stack.serve("--no-worker")
    try:
        names = [f"team{i:02d}" for i in range(2 * args.runs)]
        for name in names:
            made = stack.call("POST", "/api/users", stack.admin,
                              json={"name": name, "password": PASSWORD})
            assert made.status_code == 201, made.text

        def sign_in(name: str) -> float:
            started = time.perf_counter()
            answer = httpx.post(stack.url + "/api/session",
                                json={"name": name, "password": PASSWORD}, timeout=30)
            assert answer.status_code == 200, answer.text
            return (time.perf_counter() - started) * 1000

        one_at_a_time = [sign_in(name) for name in names[:args.runs]]
        started = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(sign_in, names[args.runs:]))
        per_s = args.runs / (time.perf_counter() - started)
        rows = "name,team\n" + "".join(f"imported{i:03d},t{i % 10}\n" for i in range(100))
        started = time.perf_counter()
        imported = httpx.post(stack.url + "/api/users/import", json={"csv": rows}, timeout=300,
                              headers={"Authorization": f"Bearer {stack.admin}"})
        import_s = time.perf_counter() - started
        assert imported.status_code == 201, imported.text
    finally:
        stack.close()
    p95 = statistics.quantiles(one_at_a_time, n=20)[18]
    block = "\n".join([
        f"Measured {date.today()} on this 2-core VM (API and client on the same machine).",
        "",
        f"Command: `python bench/sign_in.py --runs {args.runs} --write`",
        "",
        "| what | median ms | p95 ms | per s |",
        "| --- | ---: | ---: | ---: |",
        f"| argon2id check (m=19456 KiB, t=2, p=1), in process | "
        f"{statistics.median(checks):.1f} | {statistics.quantiles(checks, n=20)[18]:.1f} | – |",
        f"| `POST /api/session`, one at a time | {statistics.median(one_at_a_time):.1f} | "
        f"{p95:.1f} | – |",
        f"| `POST /api/session`, two threads | – | – | {per_s:.1f} |",
        f"| `POST /api/users/import`, 100 users | {import_s * 1000:.0f} (the request) | – | "
        f"{100 / import_s:.1f} users |",
    ])
    report_section("sign_in", "Signing in (issue 17)", block, args.write)


if __name__ == "__main__":
    main()
