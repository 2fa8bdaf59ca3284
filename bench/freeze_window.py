"""The CPU device's freeze window: how much CPU time a run's thread gets outside the judge's
clock per turn (SECURITY.md, "the thaw is inside the clock").

A turn's request is written while the run is frozen; the run is thawed after it and frozen again
as soon as its reply line arrives (`SandboxProcess.send(turn=True)`), so a thread the run left
working gets CPU time outside the clock only in the kernel's delay in freezing. Judged here:
vector_add in PyTorch, honest, and the same with a thread that spins for the whole judging, so
that every moment the run is thawed shows as that thread's CPU time. Per test point, the median
per turn of the run's CPU time less the judge's clock (the cgroup's figure, read while frozen),
less the baseline's median of the same, and what `charging.charge` made of it.

    python bench/freeze_window.py [--sandbox bwrap] [--write]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from judge.host.device import detect  # noqa: E402
from judge.judging.pipeline import JudgeOptions, judge_source  # noqa: E402
from judge.measure import charging  # noqa: E402
from judge.problem.schema import load_problem  # noqa: E402
from sandbox import get_sandbox  # noqa: E402

HONEST = """
import torch


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
"""

SPINNING = """
import threading

import torch


def spin():  # busy whenever the run is thawed: its CPU time is the thawed time
    while True:
        pass


threading.Thread(target=spin, daemon=True).start()


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
"""


def outside_ms(got: charging.Samples) -> list[float]:
    """Per turn, the run's CPU time less the judge's clock around the request, ms."""
    return [cpu - rt for cpu, rt in zip(got.cpu, got.time_rt)]


def judged(problem, source: str, sandbox) -> list[dict]:
    """One judging; per point, the turns' CPU time outside the clock and the charge."""
    seen = []
    charge = charging.charge

    def recording(sub, base, floor=None):
        result = charge(sub, base, floor)
        usual = statistics.median(outside_ms(base))
        seen.append({"outside": statistics.median(outside_ms(sub)) - usual,
                     "most": max(outside_ms(sub)) - usual, "calls": statistics.median(sub.calls),
                     "turns": len(sub.cpu), "charged": result.charged_cpu,
                     "excess": result.cpu_excess_ms * statistics.median(sub.calls)})
        return result

    charging.charge = recording
    try:
        result = judge_source(problem, source, language="torch", device=detect("cpu"),
                              sandbox=sandbox, options=JudgeOptions())
    finally:
        charging.charge = charge
    if not result.applied.get("cpu_time_charged"):
        raise SystemExit("the run's CPU time was not metered here (no cgroup, or more than one "
                         "CPU per contender): nothing to measure")
    # charge() runs per point in the order timed; the record lists the points in the problem's
    names = [t.name for t in sorted(result.tests, key=lambda t: -t.params["n"])]
    return [{"point": name, **row} for name, row in zip(names, seen)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    problem = load_problem(ROOT / "problems" / "vector_add")
    sandbox = get_sandbox(args.sandbox)
    started = time.monotonic()
    lines = []
    for name, source in (("honest", HONEST), ("a thread spinning throughout", SPINNING)):
        for run in range(args.runs):
            for row in judged(problem, source, sandbox):
                us = {key: round(1000 * row[key]) for key in ("outside", "most", "excess")}
                lines.append(
                    f"| {name} | {run + 1} | {row['point']} | {row['calls']:g} | {row['turns']} "
                    f"| {us['outside']} µs | {us['most']} µs | {us['excess']} µs "
                    f"| {'yes' if row['charged'] else 'no'} |")
    block = "\n".join([
        f"Measured {date.today()} on {platform.machine()} ({len(os.sched_getaffinity(0))} "
        f"CPUs), sandbox `{args.sandbox}`, {time.monotonic() - started:.0f} s, with "
        f"`python bench/freeze_window.py --sandbox {args.sandbox} --runs {args.runs} --write`.",
        "",
        "Per turn, the run's CPU time outside the judge's clock beyond the baseline's median "
        "(median and largest over the turns), the excess `charging.charge` worked out (the mean "
        "or the median of the paired differences, clipped at zero) and whether it charged it.",
        "",
        "| submission | judging | point | calls a turn | turns | outside the clock, median "
        "| largest | excess | charged |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
        *lines,
    ])
    report_section("freeze-window", "The freeze window (CPU device)", block, write=args.write)


if __name__ == "__main__":
    main()
