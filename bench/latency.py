"""Judging latency (issue 13), written between markers in BENCHMARKS.md with --write.

`vector_add`'s accepted loop.cpp, every test point, timed; each submission's source differs (a
comment), so each is compiled as a contestant's new submission is.

1. `kjudge judge` from the shell: the whole command's wall time (target <= 2.5 s).
2. Submit -> verdict through `kjudge serve` with its embedded defaults (SQLite, the SQLite broker,
   one embedded worker), bwrap (target p50 <= 3 s) and Docker (target p50 <= 5 s): one
   submission at a time, the next once the worker is idle again (its next slot warm).
3. A burst of 30 submissions to that one worker (target: all judged within 30 x the p50 + 5 s).
4. Where each judging's time went (the record's phases, the judge's overhead).

    python bench/latency.py [--runs 7] [--burst 30] [--backends bwrap,docker] [--write]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from tests.conftest import docker_test_image  # noqa: E402
from tests.server.stack import PROBLEMS, Stack, wait_for  # noqa: E402

SOURCE = (PROBLEMS / "vector_add/solutions/AC/loop.cpp").read_text()
TARGETS = {"kjudge judge": 2.5, "bwrap": 3.0, "docker": 5.0, "status": 0.3}
PHASES = ("queue_wait", "sandbox_start", "compile", "reference", "correctness", "timing",
          "store")


def unique(tag: str) -> str:
    return f"{SOURCE}\n// {tag} {time.time_ns()}\n"


def cli_runs(runs: int, tmp: Path) -> list[tuple[float, dict]]:
    got = []
    for i in range(runs):
        path = tmp / f"cli{i}.cpp"
        path.write_text(unique(f"cli{i}"))
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "judge.cli", "judge", "problems/vector_add",
                              str(path), "--json", "--sandbox", "bwrap"], cwd=ROOT,
                             capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
        if out.returncode != 0:
            raise SystemExit(f"kjudge judge failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
        got.append((wall, json.loads(out.stdout)))
    return got


def served(backend: str, runs: int, burst: int, tmp: Path) -> dict:
    env = {"KJUDGE_SANDBOX": backend, "KJUDGE_SUBMISSIONS_PER_MINUTE": "1000000"}
    if backend == "docker":
        image = docker_test_image()
        if image is None:
            raise SystemExit("no docker test image: run tests/docker_image.sh first")
        env |= {"KJUDGE_DOCKER_IMAGE": image, "KJUDGE_DOCKER_HOST_PYTHON": "1"}
    stack = Stack(tmp, None, "embedded", extra_env=env)  # SQLite and its broker: the defaults
    try:
        stack.serve()
        token = stack.token_for("bench")
        wait_for(lambda: b"ready" in (tmp / "serve.log").read_bytes(), 120, "the worker")
        stack.verdict(token, stack.submit(token, unique("first")), 300)  # a first, cold judging
        single, records = [], []
        for i in range(runs):
            time.sleep(6)  # an idle worker: its next slot has warmed up
            sent = time.monotonic()
            sid = stack.submit(token, unique(f"{backend}{i}"))
            record = stack.verdict(token, sid, 300)
            single.append(time.monotonic() - sent)
            records.append(wait_for(lambda sid=sid: _stored(stack, sid), 30, "the record"))
        time.sleep(6)
        sent = time.monotonic()
        ids = [stack.submit(token, unique(f"burst{i}")) for i in range(burst)]
        for sid in ids:
            record = stack.verdict(token, sid, 60 * burst)
            assert record["verdict"] == "AC", record
        burst_s = time.monotonic() - sent
        status = status_times(stack, token, ids[0], runs)
    finally:
        stack.close()
    return {"single": single, "records": records, "burst_s": burst_s, "status": status}


def status_times(stack: Stack, token: str, sid: int, runs: int) -> list[float]:
    """`kjudge status ID` from the shell: the whole command, against the served API."""
    env = {**stack.env, "KJUDGE_SERVER": stack.url, "KJUDGE_TOKEN": token}
    times = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "judge.cli", "status", str(sid)], cwd=ROOT,
                       env=env, capture_output=True, check=True)
        times.append(time.monotonic() - started)
    return times


def _stored(stack: Stack, sid: int) -> dict | None:
    record = stack.call("GET", f"/api/submissions/{sid}", stack.admin).json()
    return record if "store" in (record.get("phases") or {}) else None


def phase_row(label: str, records: list[dict]) -> str:
    cells = []
    for name in PHASES:
        values = [r["phases"].get(name) for r in records]
        values = [v for v in values if v is not None]
        cells.append(f"{statistics.median(values):.2f}" if values else "–")
    overhead = statistics.median(r["overhead_s"] for r in records)
    warm = sum(bool(r["applied"].get("warm_start")) for r in records)
    return f"| {label} | {' | '.join(cells)} | {overhead:.2f} | {warm}/{len(records)} |"


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else f"missed by {value - target:.1f} s ({value / target - 1:.0%})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--burst", type=int, default=30)
    parser.add_argument("--backends", default="bwrap,docker")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    backends = args.backends.split(",")
    command = (f"python bench/latency.py --runs {args.runs} --burst {args.burst} --backends "
               f"{args.backends} --write")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cli = cli_runs(args.runs, tmp)
        results = {}
        for backend in backends:
            (tmp / backend).mkdir()
            results[backend] = served(backend, args.runs, args.burst, tmp / backend)
    cli_p50 = statistics.median(w for w, _ in cli)
    model = cli[0][1]["applied"]["device_model"]
    lines = [f"Measured {date.today()} on this 2-core VM (CPU device; {model}).",
             "", f"Command: `{command}`", "",
             "| path | runs | p50 s | min s | max s | target | |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
             f"| `kjudge judge` (bwrap), whole command | {len(cli)} | {cli_p50:.2f} | "
             f"{min(w for w, _ in cli):.2f} | {max(w for w, _ in cli):.2f} | ≤ "
             f"{TARGETS['kjudge judge']} | {verdict(cli_p50, TARGETS['kjudge judge'])} |"]
    for backend, got in results.items():
        p50 = statistics.median(got["single"])
        lines.append(f"| `kjudge serve` submit → verdict, {backend} | {len(got['single'])} | "
                     f"{p50:.2f} | {min(got['single']):.2f} | {max(got['single']):.2f} | ≤ "
                     f"{TARGETS[backend]} | {verdict(p50, TARGETS[backend])} |")
    status = [t for got in results.values() for t in got["status"]]
    if status:
        p50 = statistics.median(status)
        lines.append(f"| `kjudge status ID`, whole command | {len(status)} | {p50:.2f} | "
                     f"{min(status):.2f} | {max(status):.2f} | ≤ {TARGETS['status']} | "
                     f"{verdict(p50, TARGETS['status'])} |")
    lines += ["", "| burst to one worker | submissions | all judged in s | 30 × p50 + 5 s | |",
              "| --- | ---: | ---: | ---: | --- |"]
    for backend, got in results.items():
        bound = args.burst * statistics.median(got["single"]) + 5
        lines.append(f"| {backend} | {args.burst} | {got['burst_s']:.1f} | {bound:.1f} | "
                     f"{verdict(got['burst_s'], bound)} |")
    lines += ["", "Where a judging's time went (medians, seconds; `kjudge judge` has no queue or "
              "store), the judge's overhead (wall − time inside run_kernel and the baseline) and "
              "how many judgings found their slot warm:", "",
              f"| path | {' | '.join(PHASES)} | overhead | warm |",
              f"| --- |{' ---: |' * (len(PHASES) + 2)}"]
    cli_records = [d for _, d in cli]  # the same record as the service stores
    lines.append(phase_row("`kjudge judge`", cli_records))
    for backend, got in results.items():
        lines.append(phase_row(f"serve, {backend}", got["records"]))
    block = "\n".join(lines)
    report_section("latency", "Judging latency (issue 13)", block, args.write)


if __name__ == "__main__":
    main()
