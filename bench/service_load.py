"""Service figures (issue 3), written between markers in BENCHMARKS.md with --write.

1. POST /api/submissions under load from this (second) process: accepted submissions per second
   and latency percentiles, against `kjudge serve --no-worker` (one uvicorn process) with a Redis
   broker and PostgreSQL (the production shape) or SQLite.
2. Submit-to-verdict latency of vector_add (loop.cpp, full judging with timing) for a burst of
   submissions, with one and with two workers.

    python bench/service_load.py [--requests 400] [--concurrency 16] [--burst 6] [--db postgresql]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import write_section  # noqa: E402
from tests.server.stack import PROBLEMS, Stack, wait_for  # noqa: E402

SOURCE = (PROBLEMS / "vector_add/solutions/AC/loop.cpp").read_text()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def load(stack: Stack, token: str, requests: int, concurrency: int) -> dict:
    latencies: list[float] = []
    failures = 0
    queue = asyncio.Queue()
    for _ in range(requests):
        queue.put_nowait(None)
    body = {"problem": "vector_add", "language": "cpp", "source": SOURCE}
    headers = {"Authorization": f"Bearer {token}"}

    async def client() -> None:
        nonlocal failures
        async with httpx.AsyncClient(base_url=stack.url, headers=headers, timeout=60) as http:
            while not queue.empty():
                queue.get_nowait()
                started = time.perf_counter()
                response = await http.post("/api/submissions", json=body)
                latencies.append((time.perf_counter() - started) * 1000)
                failures += response.status_code != 202

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return {"accepted_per_s": (requests - failures) / wall, "failures": failures,
            "p50": percentile(latencies, 50), "p99": percentile(latencies, 99), "wall": wall}


def burst_latency(stack: Stack, token: str, burst: int) -> dict:
    submitted = {}
    for _ in range(burst):
        sid = stack.submit(token, SOURCE)
        submitted[sid] = time.monotonic()
    latencies = {}
    deadline = time.monotonic() + 900
    while len(latencies) < burst and time.monotonic() < deadline:
        for sid, sent in submitted.items():
            if sid in latencies:
                continue
            record = stack.call("GET", f"/api/submissions/{sid}", token).json()
            if record["state"] == "DONE":
                latencies[sid] = time.monotonic() - sent
        time.sleep(0.1)
    values = list(latencies.values())
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "max": max(values),
            "judged": len(values)}


def postgres_url() -> str:
    import uuid

    import sqlalchemy as sa

    name = f"kjudge_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
                             isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--burst", type=int, default=6)
    parser.add_argument("--db", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    lines = [f"Measured {date.today()} on this 2-core VM; API, workers, Redis and the database "
             "all on the same machine as the load.", "",
             f"Command: `python bench/service_load.py --requests {args.requests} --concurrency "
             f"{args.concurrency} --burst {args.burst} --db {args.db} --write`", ""]
    env = {"KJUDGE_SUBMISSIONS_PER_MINUTE": "1000000"}
    with tempfile.TemporaryDirectory() as tmp:
        url = postgres_url() if args.db == "postgresql" else None
        stack = Stack(Path(tmp), url, "redis", extra_env=env)
        try:
            stack.serve("--no-worker")
            token = stack.token_for("bench")
            figures = asyncio.run(load(stack, token, args.requests, args.concurrency))
            lines += [
                "| POST /api/submissions | accepted / s | p50 ms | p99 ms | failed |",
                "| --- | ---: | ---: | ---: | ---: |",
                f"| {args.requests} requests, {args.concurrency} concurrent, {args.db} + Redis | "
                f"{figures['accepted_per_s']:.0f} | {figures['p50']:.1f} | {figures['p99']:.1f} "
                f"| {figures['failures']} |", "",
            ]
        finally:
            stack.close()
        rows = []
        for workers in (1, 2):
            sub = Path(tmp) / f"w{workers}"
            sub.mkdir()
            stack = Stack(sub, None if args.db == "sqlite" else postgres_url(), "redis",
                          extra_env=env)
            try:
                stack.serve("--no-worker")
                for _ in range(workers):
                    stack.worker()
                token = stack.token_for("bench")
                log = stack.tmp / "worker.log"
                wait_for(lambda log=log: log.exists() and b"ready" in log.read_bytes(), 60,
                         "workers")
                stack.verdict(token, stack.submit(token, SOURCE), 300)  # warm the compile cache
                figures = burst_latency(stack, token, args.burst)
                rows.append(f"| {workers} | {args.burst} | {figures['p50']:.1f} | "
                            f"{figures['p95']:.1f} | {figures['max']:.1f} |")
            finally:
                stack.close()
    lines += ["| workers | burst of submissions | submit→verdict p50 s | p95 s | max s |",
              "| ---: | ---: | ---: | ---: | ---: |", *rows]
    block = "\n".join(lines)
    print(block)
    if args.write:
        write_section("service_load", "Service (issue 3)", block)

if __name__ == "__main__":
    main()
