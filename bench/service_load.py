"""Service figures (issue 13), written between markers in BENCHMARKS.md with --write.

1. POST /api/submissions under load from this (second) process: accepted submissions per second
   and latency percentiles, against `kjudge serve --no-worker` with a Redis broker and
   PostgreSQL (the production shape). Targets: >= 300 accepted / s, p99 <= 100 ms.
2. GET /api/leaderboard and GET /api/problems with 10,000 judged submissions in the database
   (200 users, every problem), polled from this process. Target: p99 <= 50 ms.

    python bench/service_load.py [--requests 3000] [--concurrency 32] [--api-processes 2]
                                 [--submissions 10000] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import write_section  # noqa: E402
from tests.server.stack import PROBLEMS, Stack  # noqa: E402

SOURCE = (PROBLEMS / "vector_add/solutions/AC/loop.cpp").read_text()
TARGET_RATE, TARGET_P99, TARGET_READ_P99 = 300, 100.0, 50.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def hammer(url: str, requests: int, concurrency: int, send) -> dict:
    """`requests` calls of `send(client)` from `concurrency` connections; latency in ms."""
    latencies: list[float] = []
    failures = 0
    left = iter(range(requests))

    async def client() -> None:
        nonlocal failures
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            for _ in left:
                started = time.perf_counter()
                response = await send(http)
                latencies.append((time.perf_counter() - started) * 1000)
                failures += response.status_code >= 400

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return {"per_s": (requests - failures) / wall, "failures": failures,
            "p50": percentile(latencies, 50), "p99": percentile(latencies, 99)}


def postgres_url() -> str:
    import sqlalchemy as sa

    name = f"kjudge_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
                             isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


def fill(url: str, submissions: int, users: int = 200) -> None:
    """`submissions` judged submissions (a third AC with a score, some rejudged, some SE) by
    `users` contestants over every active problem, written straight to the database."""
    from judge.server import db
    from judge.server.models import Judging, Problem, Submission, User, utcnow
    from judge.server.service import hash_token

    rng = random.Random(13)
    with db.session(url) as s:
        problems = [p.id for p in s.query(Problem).filter(Problem.active)]
        people = [User(name=f"team{i:03d}", token_hash=hash_token(uuid.uuid4().hex))
                  for i in range(users)]
        s.add_all(people)
        s.flush()
        start = utcnow() - timedelta(hours=5)
        rows = [Submission(user_id=rng.choice(people).id, problem_id=rng.choice(problems),
                           language="cpp", source=SOURCE,
                           created_at=start + timedelta(seconds=i)) for i in range(submissions)]
        s.add_all(rows)
        s.flush()
        judgings = []
        for row in rows:
            verdict = rng.choice(["AC", "AC", "WA", "CE", "SE"])
            score = rng.uniform(50, 300) if verdict == "AC" else 0.0
            judgings.append(Judging(submission_id=row.id, queue="judge.cpu", state="DONE",
                                    verdict=verdict, score=score, finished_at=row.created_at))
            if rng.random() < 0.1:  # rejudged: the later judging is current
                judgings.append(Judging(submission_id=row.id, queue="judge.cpu", state="DONE",
                                        verdict="AC", score=rng.uniform(50, 300),
                                        finished_at=row.created_at))
        s.add_all(judgings)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--api-processes", type=int, default=2)
    parser.add_argument("--submissions", type=int, default=10000)
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    command = (f"python bench/service_load.py --requests {args.requests} --concurrency "
               f"{args.concurrency} --api-processes {args.api_processes} --submissions "
               f"{args.submissions} --reads {args.reads} --write")
    lines = [f"Measured {date.today()} on this 2-core VM: API ({args.api_processes} processes), "
             "Redis, PostgreSQL and the load generator all on the same machine.", "",
             f"Command: `{command}`", ""]
    env = {"KJUDGE_SUBMISSIONS_PER_MINUTE": "1000000"}
    with tempfile.TemporaryDirectory() as tmp:
        url = postgres_url()
        stack = Stack(Path(tmp), url, "redis", extra_env=env)
        try:
            stack.serve("--no-worker", "--api-processes", str(args.api_processes))
            token = stack.token_for("bench")
            body = {"problem": "vector_add", "language": "cpp", "source": SOURCE}
            headers = {"Authorization": f"Bearer {token}"}
            asyncio.run(hammer(stack.url, 100, 8, lambda http: http.post(
                "/api/submissions", json=body, headers=headers)))  # warm the processes
            posts = asyncio.run(hammer(stack.url, args.requests, args.concurrency,
                                       lambda http: http.post("/api/submissions", json=body,
                                                              headers=headers)))
            fill(url, args.submissions)
            reads = {path: asyncio.run(hammer(stack.url, args.reads, 8, lambda http, path=path:
                                              http.get(path, headers=headers)))
                     for path in ("/api/leaderboard", "/api/problems")}
        finally:
            stack.close()

    def verdict(value: float, target: float, higher: bool) -> str:
        met = value >= target if higher else value <= target
        return "met" if met else f"missed by {abs(value - target) / target:.0%}"

    lines += [
        "| request | load | per s | p50 ms | p99 ms | failed | target |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
        f"| POST /api/submissions | {args.requests} requests, {args.concurrency} concurrent | "
        f"{posts['per_s']:.0f} | {posts['p50']:.1f} | {posts['p99']:.1f} | {posts['failures']} | "
        f"≥ {TARGET_RATE}/s: {verdict(posts['per_s'], TARGET_RATE, True)}; p99 ≤ "
        f"{TARGET_P99:.0f} ms: {verdict(posts['p99'], TARGET_P99, False)} |",
    ]
    for path, got in reads.items():
        lines.append(f"| GET {path} | {args.submissions + args.requests + 100} submissions in "
                     f"the database, 8 concurrent | {got['per_s']:.0f} | {got['p50']:.1f} | "
                     f"{got['p99']:.1f} | {got['failures']} | p99 ≤ {TARGET_READ_P99:.0f} ms: "
                     f"{verdict(got['p99'], TARGET_READ_P99, False)} |")
    block = "\n".join(lines)
    print(block)
    if args.write:
        write_section("service_load", "Service (issue 13)", block)


if __name__ == "__main__":
    main()
