"""Faults under load (issue 15), written between markers in BENCHMARKS.md with --write.

A client posts submissions (tests/problems/quick_add: correctness only, a judging takes a
second or two) from 20 contestants until `--submissions` are accepted, while the deployment of
real processes (`kjudge serve --no-worker`, two `kjudge worker`, a Redis and a PostgreSQL of
its own, so that both can be restarted) suffers, in turn: a worker SIGKILLed mid-judging (and
started again), Redis restarted (it keeps nothing: its queues are gone), PostgreSQL crashed and
restarted (`pg_ctl stop -m immediate`), the API process SIGKILLed and started again. Then every
accepted submission must end with exactly one judging, DONE and AC, and none may be stuck.

Per fault: answers other than 202 while it lasted (4xx, 5xx, no answer), and the time from the
fault until the API accepted submissions again, until a judging finished again, and until every
judging that was in flight when it struck was done.

    python bench/faults.py [--submissions 500] [--rate 4] [--write]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from bench.benchmarks_md import report_section  # noqa: E402
from tests.server.stack import PrivatePostgres, Stack, wait_for  # noqa: E402

PROBLEMS = ROOT / "tests" / "problems"
SOURCE = (PROBLEMS / "quick_add/solutions/AC/loop.cpp").read_text()
CALM_S = 15  # between faults: the deployment settles, the backlog is judged


@dataclass
class Answer:
    at: float
    status: int | None  # None: no answer (connection refused, reset, timeout)


@dataclass
class Submitter:
    """Posts submissions at `rate` per second until `target` are accepted."""

    url: str
    tokens: list[str]
    target: int
    rate: float
    answers: list[Answer] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            turn = 0
            while len(self.accepted) < self.target:
                started = time.monotonic()
                token = self.tokens[turn % len(self.tokens)]
                turn += 1
                try:
                    response = client.post(self.url + "/api/submissions", json={
                        "problem": "quick_add", "language": "cpp", "source": SOURCE},
                        headers={"Authorization": f"Bearer {token}"})
                    self.answers.append(Answer(started, response.status_code))
                    if response.status_code == 202:
                        self.accepted.append(response.json()["id"])
                except httpx.HTTPError:
                    self.answers.append(Answer(started, None))
                time.sleep(max(0.0, 1 / self.rate - (time.monotonic() - started)))


@dataclass
class Fault:
    name: str
    started: float = 0.0  # monotonic
    started_wall: datetime | None = None
    ended_wall: datetime | None = None
    in_flight: list[int] = field(default_factory=list)


def db_rows(url: str, query: str, **params):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(query), params).all()
    finally:
        engine.dispose()


def in_flight(url: str) -> list[int]:
    return [r[0] for r in db_rows(url, "SELECT id FROM judgings WHERE state IN "
                                       "('COMPILING', 'RUNNING')")]


def inject(fault: Fault, stack: Stack, pg: PrivatePostgres, workers: list) -> None:
    if fault.name == "worker SIGKILLed":
        victim = workers.pop(0)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        time.sleep(2)
        workers.append(stack.worker())
    elif fault.name == "Redis restarted":
        stack.stop_redis()
        time.sleep(2)
        stack.start_redis()
    elif fault.name == "PostgreSQL restarted":
        pg.stop("immediate")
        time.sleep(2)
        pg.start()
    elif fault.name == "API SIGKILLed":
        api = stack.procs[0]
        os.killpg(api.pid, signal.SIGKILL)
        api.wait()
        time.sleep(2)
        stack.procs.remove(api)
        stack.procs.insert(0, stack.spawn("serve", "--no-worker", "--port", str(stack.port),
                                          "--quiet", log="serve.log"))
        wait_for(stack.healthy, 120, "the API to come back")


def run(submissions: int, rate: float) -> tuple[list[str], dict]:
    tmp = Path(tempfile.mkdtemp(prefix="kjudge-faults-"))
    pg = PrivatePostgres()
    stack = Stack(tmp, pg.url, broker="redis", extra_env={
        "KJUDGE_PROBLEMS": str(PROBLEMS), "KJUDGE_SUBMISSIONS_PER_MINUTE": "100000",
        "KJUDGE_STALE_AFTER_S": "10"})
    try:
        stack.serve("--no-worker")
        workers = [stack.worker(), stack.worker()]
        tokens = [stack.token_for(f"team{i:02d}") for i in range(20)]
        submitter = Submitter(stack.url, tokens, submissions, rate)
        thread = threading.Thread(target=submitter.run, daemon=True)
        begun = time.monotonic()
        thread.start()
        faults = [Fault(name) for name in ("worker SIGKILLed", "Redis restarted",
                                           "PostgreSQL restarted", "API SIGKILLed")]
        for fault in faults:
            time.sleep(CALM_S)
            wait_for(lambda: in_flight(pg.url), 120, "a judging in flight")
            fault.in_flight = in_flight(pg.url)
            fault.started, fault.started_wall = time.monotonic(), datetime.now(timezone.utc)
            inject(fault, stack, pg, workers)
            fault.ended_wall = datetime.now(timezone.utc)
            print(f"{fault.name}: done at {time.monotonic() - begun:.0f} s", flush=True)
        thread.join()
        submitted_s = time.monotonic() - begun
        total = len(submitter.accepted)
        wait_for(lambda: db_rows(pg.url, "SELECT count(*) FROM judgings WHERE state <> 'DONE'")
                 [0][0] == 0, 3600, "every judging to end")
        drained_s = time.monotonic() - begun
        lines = report(faults, submitter, pg.url, submitted_s, drained_s)
        return lines, {"accepted": total}
    finally:
        stack.close()
        pg.close()


def report(faults: list[Fault], submitter: Submitter, url: str, submitted_s: float,
           drained_s: float) -> list[str]:
    finished = [(r[0], r[1]) for r in db_rows(url, "SELECT id, finished_at FROM judgings")]
    rows = []
    for i, fault in enumerate(faults):
        until = faults[i + 1].started if i + 1 < len(faults) else float("inf")
        window = [a for a in submitter.answers if fault.started <= a.at < until]
        failed = [a for a in window if a.status != 202]
        accepting = (max(a.at for a in failed) - fault.started) if failed else 0.0
        after = sorted(aware(f) for _, f in finished if f and aware(f) > fault.ended_wall)
        judging = (after[0] - fault.started_wall).total_seconds() if after else float("nan")
        flight = [aware(f) for j, f in finished if j in fault.in_flight and f]
        flight_s = (max(flight) - fault.started_wall).total_seconds() if flight else float("nan")
        counts = {kind: sum(1 for a in failed if _kind(a.status) == kind)
                  for kind in ("4xx", "503", "other 5xx", "no answer")}
        rows.append(f"| {fault.name} | {len(window)} | {counts['4xx']} | {counts['503']} | "
                    f"{counts['other 5xx']} | {counts['no answer']} | {accepting:.1f} | "
                    f"{judging:.1f} | "
                    f"{len(fault.in_flight)} → {flight_s:.1f} |")
    accepted = set(submitter.accepted)
    per_submission = db_rows(url, "SELECT s.id, count(j.id), min(j.state), max(j.state), "
                                  "min(j.verdict), max(j.verdict), max(j.attempts) FROM "
                                  "submissions s LEFT JOIN judgings j ON j.submission_id = s.id "
                                  "GROUP BY s.id")
    stored = {r[0] for r in per_submission}
    lost = len(accepted - stored) + sum(1 for r in per_submission if r[0] in accepted
                                        and (r[1] == 0 or r[3] != "DONE" or r[2] != "DONE"))
    double = sum(1 for r in per_submission if r[1] > 1)
    not_ac = sum(1 for r in per_submission if r[1] and (r[4], r[5]) != ("AC", "AC"))
    reclaimed = sum(1 for r in per_submission if (r[6] or 0) > 1)
    unanswered = len(stored - accepted)
    return [
        f"{len(accepted)} submissions accepted ({len(submitter.answers)} posted, 20 "
        f"contestants, ~{submitter.rate:g}/s) in {submitted_s:.0f} s, all judged "
        f"{drained_s:.0f} s after the start; 2 workers, faults {CALM_S} s apart. "
        f"**Lost: {lost}. Judged twice: {double}.** Not AC: {not_ac}. Judgings claimed again "
        f"after a fault: {reclaimed}. Stored but unanswered (the API died before its 202): "
        f"{unanswered}.",
        "",
        "| fault | answers during it | 4xx | 503 (retry) | other 5xx | no answer | "
        "accepting again after (s) | a judging ends again after (s) | "
        "in flight → all done after (s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
    ]


def _kind(status: int | None) -> str:
    if status is None:
        return "no answer"
    if status == 503:
        return "503"
    return "other 5xx" if status >= 500 else "4xx"


def aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=500)
    parser.add_argument("--rate", type=float, default=4.0, help="submissions posted per second")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    lines, _ = run(args.submissions, args.rate)
    command = f"python bench/faults.py --submissions {args.submissions} --rate {args.rate:g}"
    block = "\n".join([f"`{command}` ({datetime.now(timezone.utc):%Y-%m-%d}, 2-core VM, CPU "
                       "workers with bwrap):", "", *lines])
    report_section("faults", "Faults under load (issue 15)", block, args.write)


if __name__ == "__main__":
    main()
