"""Service figures (issue 13), written between markers in BENCHMARKS.md with --write.

1. POST /api/submissions under load from this (second) process: accepted submissions per second
   and latency percentiles, against `kjudge serve --no-worker` with a Redis broker and
   PostgreSQL (the production shape). Targets: >= 300 accepted / s, p99 <= 100 ms.
2. GET /api/leaderboard and GET /api/problems with 10,000 judged submissions in the database
   (200 users, every problem), polled from this process. Target: p99 <= 50 ms.
3. Attacks (issue 44): PARALLEL submissions at once by one contestant against a contest quota of
   one and another of QUOTA_PER_HOUR an hour, through HTTP: the count stored must be exact; and
   the largest body the API takes to mark clarifications read, timed.

    python bench/service_load.py [--seconds 10] [--connections 32] [--api-processes 2]
                                 [--submissions 10000] [--attacks-only] [--write]

Load from wrk (Debian's `wrk`), a C load generator: the API's share of the 2 cores is measured,
not a Python client's.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import uuid
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from tests.server.stack import PROBLEMS, Stack  # noqa: E402

SOURCE = (PROBLEMS / "vector_add/solutions/AC/loop.cpp").read_text()
TARGET_RATE, TARGET_P99, TARGET_READ_P99 = 300, 100.0, 50.0


def wrk(url: str, path: str, tokens: list[str], seconds: int, connections: int,
        body: dict | None = None) -> dict:
    """Load from wrk (C, one thread: the load generator takes little of the 2 cores the API
    shares with it), `connections` open connections for `seconds`, the requests signed by
    `tokens` in turn (contestants, each under the rate limit a contest would set); ms."""
    import json
    import re
    import subprocess

    lines = ["tokens = {" + ", ".join(f'"{t}"' for t in tokens) + "}", "turn = 0",
             "function request()", "  turn = turn % #tokens + 1",
             '  wrk.headers["Authorization"] = "Bearer " .. tokens[turn]',
             "  return wrk.format()", "end"]
    if body is not None:
        lines += ['wrk.method = "POST"', 'wrk.headers["Content-Type"] = "application/json"',
                  f"wrk.body = [==[{json.dumps(body)}]==]"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines) + "\n")
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency",
                          "-s", script.name, url + path], capture_output=True, text=True,
                         check=True).stdout

    def ms(label: str) -> float:
        value, unit = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    total = int(re.search(r"(\d+) requests in", out).group(1))
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    failures = int(failed.group(1)) if failed else 0
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"per_s": rate * (total - failures) / max(total, 1), "failures": failures,
            "requests": total, "p50": ms("50"), "p99": ms("99")}


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
    from judge.service import counters, db
    from judge.service.models import JudgingRow, ProblemRow, Submission, User, utcnow

    rng = random.Random(13)
    with db.session(url) as s:
        problems = [p.id for p in s.query(ProblemRow).filter(ProblemRow.active)]
        people = [User(name=f"team{i:03d}") for i in range(users)]
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
            judgings.append(JudgingRow(submission_id=row.id, queue="judge.cpu", state="DONE",
                                    verdict=verdict, score=score, finished_at=row.created_at))
            if rng.random() < 0.1:  # rejudged: the later judging is current
                judgings.append(JudgingRow(submission_id=row.id, queue="judge.cpu", state="DONE",
                                        verdict="AC", score=rng.uniform(50, 300),
                                        finished_at=row.created_at))
        s.add_all(judgings)
        counters.results_changed(s)  # as every judging's end does
    if url.startswith("postgresql"):  # the planner's statistics, as autovacuum would make them
        with db.engine(url).connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")


PARALLEL, QUOTA_PER_HOUR = 50, 10


def race(stack: Stack, token: str, body: dict) -> list[int]:
    """PARALLEL POST /api/submissions of one contestant at once (threads released together,
    each on its own connection): their statuses."""
    import threading

    import httpx

    start, statuses = threading.Barrier(PARALLEL), []

    def one() -> None:
        with httpx.Client(timeout=60) as client:
            start.wait()
            statuses.append(client.post(stack.url + "/api/submissions", json=body,
                                        headers={"Authorization": f"Bearer {token}"})
                            .status_code)

    threads = [threading.Thread(target=one) for _ in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def parallel_against_quotas(stack: Stack) -> list[str]:
    """A contest quota of one, and one of QUOTA_PER_HOUR an hour, raced: how many were taken
    and stored, as table rows."""
    rows = []
    for slug, quota, cap in (("quota-one", {"per_contest": 1}, 1),
                             ("quota-hour", {"per_hour": QUOTA_PER_HOUR}, QUOTA_PER_HOUR)):
        made = stack.call("POST", "/api/contests", stack.admin, json={
            "slug": slug, "title": slug, "problems": ["vector_add"],
            "quotas": {"ranked": quota}})
        made.raise_for_status()
        token = stack.token_for(f"racer-{slug}")
        statuses = race(stack, token, {"problem": "vector_add", "language": "cpp",
                                       "source": SOURCE, "contest": slug})
        stored = len(stack.call("GET", "/api/submissions?limit=1000", token).json())
        taken = sum(200 <= status < 300 for status in statuses)
        exact = taken == stored == cap and statuses.count(429) == PARALLEL - cap
        rows.append(f"| {PARALLEL} parallel POST /api/submissions, one contestant, quota "
                    f"{quota} | {taken} taken, {stored} stored, {statuses.count(429)} refused "
                    f"(429) | exactly {cap}: {'met' if exact else 'MISSED'} |")
    return rows


def largest_read_body(stack: Stack) -> str:
    """The largest list of ids the API takes to mark read, timed (the old API took 200,000:
    0.25 s a request); and the next size refused."""
    import time

    from judge.service.api.clarifications import MAX_READ_IDS

    token = stack.token_for("reader")
    ids = list(range(1, MAX_READ_IDS + 1))
    stack.call("POST", "/api/clarifications/read", token, json={"ids": ids})  # warm
    started = time.perf_counter()
    for _ in range(10):
        stack.call("POST", "/api/clarifications/read", token, json={"ids": ids})
    ms = (time.perf_counter() - started) * 100
    refused = stack.call("POST", "/api/clarifications/read", token,
                         json={"ids": list(range(1, 200_001))}).status_code
    return (f"| POST /api/clarifications/read, {MAX_READ_IDS} ids (the most taken) | "
            f"{ms:.1f} ms a request; 200,000 ids: {refused} | bounded: "
            f"{'met' if refused == 422 else 'MISSED'} |")


def attacks(stack: Stack) -> list[str]:
    return ["| attack | got | target |", "| --- | --- | --- |",
            *parallel_against_quotas(stack), largest_read_body(stack)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--api-processes", type=int, default=2)
    parser.add_argument("--submissions", type=int, default=10000)
    parser.add_argument("--attacks-only", action="store_true",
                        help="only part 3 (no wrk needed)")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = postgres_url()
        # the rate limit out of the way of the load; the attacks race the contests' quotas
        stack = Stack(Path(tmp), url, "redis",
                      extra_env={"KJUDGE_SUBMISSIONS_PER_MINUTE": "100000"})
        try:
            stack.serve("--no-worker", "--api-processes", str(args.api_processes))
            if not args.attacks_only:
                load(args, stack, url)
            attack_rows = attacks(stack)
        finally:
            stack.close()
    command = f"python bench/service_load.py --api-processes {args.api_processes}"
    report_section("service_attacks", "Service under attack (issue 44)", "\n".join([
        f"Measured {date.today()} on this 2-core VM: API ({args.api_processes} processes), "
        "Redis, PostgreSQL and the clients on the same machine.", "",
        f"Command: `{command} --attacks-only --write` (also part of the full run)", "",
        *attack_rows]), args.write)


def load(args: argparse.Namespace, stack: Stack, url: str) -> None:
    """Parts 1 and 2, written as their section."""
    tokens = [stack.token_for(f"bench{i}") for i in range(args.connections)]
    body = {"problem": "vector_add", "language": "cpp", "source": SOURCE}
    wrk(stack.url, "/api/submissions", tokens, 3, 8, body)  # warm the processes
    posts = wrk(stack.url, "/api/submissions", tokens, args.seconds, args.connections, body)
    fill(url, args.submissions)
    reads = {}
    for path in ("/api/leaderboard", "/api/problems"):
        wrk(stack.url, path, tokens, 3, 8)  # each process computes the results once
        reads[path] = wrk(stack.url, path, tokens, args.seconds, 8)
    command = (f"python bench/service_load.py --seconds {args.seconds} --connections "
               f"{args.connections} --api-processes {args.api_processes} --submissions "
               f"{args.submissions} --write")
    lines = [f"Measured {date.today()} on this 2-core VM: API ({args.api_processes} processes), "
             "Redis, PostgreSQL and the load generator all on the same machine.", "",
             f"Command: `{command}`", ""]

    def verdict(value: float, target: float, higher: bool) -> str:
        met = value >= target if higher else value <= target
        return "met" if met else f"missed by {abs(value - target) / target:.0%}"

    lines += [
        "| request | load | per s | p50 ms | p99 ms | failed | target |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
        f"| POST /api/submissions | {posts['requests']} requests in {args.seconds} s, "
        f"{args.connections} connections | "
        f"{posts['per_s']:.0f} | {posts['p50']:.1f} | {posts['p99']:.1f} | {posts['failures']} | "
        f"≥ {TARGET_RATE}/s: {verdict(posts['per_s'], TARGET_RATE, True)}; p99 ≤ "
        f"{TARGET_P99:.0f} ms: {verdict(posts['p99'], TARGET_P99, False)} |",
    ]
    for path, got in reads.items():
        lines.append(f"| GET {path} | {args.submissions + posts['requests']} submissions in "
                     f"the database, 8 connections | {got['per_s']:.0f} | {got['p50']:.1f} | "
                     f"{got['p99']:.1f} | {got['failures']} | p99 ≤ {TARGET_READ_P99:.0f} ms: "
                     f"{verdict(got['p99'], TARGET_READ_P99, False)} |")
    report_section("service_load", "Service (issue 13)", "\n".join(lines), args.write)


if __name__ == "__main__":
    main()
