"""What a timed round costs the judge besides the turns, per CPU test point of every bundled
problem: drawing and writing the round's fresh inputs (`FreshRounds.begin`), keeping the
reservoir's calls and sampling both contenders' outputs (`FreshRounds.end`), and checking one
kept call afterwards (its inputs drawn again, the reference, the checker).

    python bench/round_cost.py [--rounds 20] [--no-write]

No contender runs: the outputs are the poison the judge writes, which every call then looks
skipped on (so `end` includes keeping suspects, at most MAX_SUSPECTS a point, as in a run whose
calls all skip). Medians over the rounds, in this process, on this machine's CPUs.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from bench.benchmarks_md import report_section  # noqa: E402
from checkers import get_checker  # noqa: E402
from judge.judging.reference import Reference, derive_seed  # noqa: E402
from judge.measure import fresh_rounds  # noqa: E402
from judge.measure import rounds as timing  # noqa: E402
from judge.measure.shared import SharedTensors  # noqa: E402
from judge.problem.schema import load_problem  # noqa: E402


def _bytes(specs: list[tuple[list[int], str]]) -> int:
    return sum(math.prod(shape) * getattr(torch, dtype).itemsize for shape, dtype in specs)


def point_cost(problem, reference: Reference, test, rounds: int, folder: Path) -> dict:
    inputs = [(reference.input_shape(a, test), a.dtype) for a in problem.inputs]
    outputs = [(s["shape"], s["dtype"]) for s in reference.output_specs(test).values()]
    slots = timing.batch_slots(max(_bytes(inputs), _bytes(outputs)))
    fresh = SharedTensors(folder / "in.raw", inputs, False, slots)
    shared = {role: SharedTensors(folder / f"{role}.raw", outputs, True, slots)
              for role in ("submission", "baseline")}

    def draw(index: int, slot: int) -> list:
        drawn = reference.inputs(test, derive_seed(1, test.name, f"timed{index}.{slot}"))
        return [drawn[a.name] for a in problem.inputs]

    rounds_of = fresh_rounds.FreshRounds(draw, fresh.write_sets, shared, folder / "kept",
                                   fresh_rounds.checked_calls(8, _bytes(outputs)),
                                   set_bytes=fresh.size)
    begin, end = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        rounds_of.begin(slots)
        begin.append(time.perf_counter() - started)
        started = time.perf_counter()
        for role in shared:
            rounds_of.end(role, slots)
        end.append(time.perf_counter() - started)
    checker, tol = get_checker(problem.spec.checker.name, problem.path), problem.spec.tolerance
    checks = []
    for index in range(5):
        started = time.perf_counter()
        drawn = reference.inputs(test, derive_seed(1, test.name, f"timed{index}.0"))
        for expected in reference.expected(test, drawn).values():
            checker(expected.clone(), expected, rtol=tol.rtol, atol=tol.atol,
                    matched_ratio=tol.matched_ratio, **problem.spec.checker.args)
        checks.append(time.perf_counter() - started)
    for file in (fresh, *shared.values()):
        file.close()
    begin_ms = 1000 * statistics.median(begin)
    return {"slots": slots, "begin_ms": begin_ms, "per_set_us": 1000 * begin_ms / slots,
            "end_ms": 1000 * statistics.median(end), "check_ms": 1000 * statistics.median(checks),
            "set_kb": _bytes(inputs) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = ["| problem | point | inputs a call | calls a batch | draw and write a round | "
            "a call's set | keep and sample, both contenders | check one kept call |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    started = time.monotonic()
    for folder in sorted((ROOT / "problems").iterdir()):
        problem = load_problem(folder)
        tests = problem.tests_for("cpu")
        if not tests:
            continue
        reference = Reference(problem, "cpu")
        for test in tests:
            with tempfile.TemporaryDirectory() as tmp:
                cost = point_cost(problem, reference, test, args.rounds, Path(tmp))
            rows.append(f"| {problem.slug} | {test.name} | {cost['set_kb']:.1f} KiB | "
                        f"{cost['slots']} | {cost['begin_ms']:.1f} ms | "
                        f"{cost['per_set_us']:.0f} µs | {cost['end_ms']:.1f} ms | "
                        f"{cost['check_ms']:.2f} ms |")
    block = "\n".join([
        f"Measured {date.today()} on {platform.processor() or platform.machine()} "
        f"({len(os.sched_getaffinity(0))} CPUs), {time.monotonic() - started:.0f} s, with "
        f"`python bench/round_cost.py --rounds {args.rounds}` (medians over the rounds).",
        "",
        *rows,
    ])
    report_section("round-cost", "What a timed round costs the judge (issue 28)", block,
                   write=not args.no_write)


if __name__ == "__main__":
    main()
