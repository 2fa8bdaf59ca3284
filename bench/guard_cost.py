"""What KernelGuard's opinion costs a judging: the child process's wall and CPU time per source
(every Python template and AC self-test of the bundled problems), and a Triton judging's wall
time with it and without it, alternating (it runs beside the judging: what it adds is its CPU
time where the host has no CPU to spare, nothing where it has).

    python bench/guard_cost.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from judge.judging import guard  # noqa: E402


def child_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def opinion_costs(sources: list[Path], runs: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(runs):
        for path in sources:
            before, started = child_cpu_s(), time.perf_counter()
            report = guard.GuardRun(path.read_text()).report()
            walls.append(time.perf_counter() - started)
            cpus.append(child_cpu_s() - before)
            assert not report.error, report.error
    return walls, cpus


def judging_walls(runs: int) -> dict[str, list[float]]:
    from judge.host.device import detect
    from judge.host.sandbox import sandbox_for
    from judge.judging import pipeline
    from judge.problem.schema import load_problem

    problem = load_problem(ROOT / "problems" / "vector_add")
    source = (problem.path / "solutions" / "AC" / "triton_add.py").read_text()
    device = detect("cpu")
    sandbox = sandbox_for(device)
    walls: dict[str, list[float]] = {"with KernelGuard": [], "without": []}
    real = pipeline.GuardRun
    try:
        for i in range(runs):
            # the order alternates: the first of a pair runs on a cooler machine
            for label in (list(walls) if i % 2 == 0 else list(walls)[::-1]):
                pipeline.GuardRun = real if label == "with KernelGuard" else _NoOpinion
                result = pipeline.judge_source(problem, source, device=device, sandbox=sandbox,
                                               options=pipeline.JudgeOptions(timing=False),
                                               language="triton")
                walls[label].append(result.wall_s)
    finally:
        pipeline.GuardRun = real
    return walls


class _NoOpinion:
    def __init__(self, source: str):
        pass

    def report(self) -> guard.GuardReport:
        return guard.GuardReport(error="switched off for the benchmark")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    sources = sorted(p for folder in (ROOT / "problems").iterdir() if folder.is_dir()
                     for p in [*(folder / "templates").glob("*.py"),
                               *(folder / "solutions" / "AC").glob("*.py")])
    walls, cpus = opinion_costs(sources, args.runs)
    judged = judging_walls(args.runs)
    lines = [f"Command: `python bench/guard_cost.py --runs {args.runs} --write` "
             f"({len(sources)} sources x {args.runs} runs; a Triton vector_add judging, no "
             "timing, in the configured sandbox).", "",
             "| figure | median | max |", "| --- | --- | --- |",
             f"| child wall per source | {statistics.median(walls):.3f} s | {max(walls):.3f} s |",
             f"| child CPU per source | {statistics.median(cpus):.3f} s | {max(cpus):.3f} s |"]
    for label, values in judged.items():
        lines.append(f"| judging wall, {label} | {statistics.median(values):.2f} s | "
                     f"{max(values):.2f} s |")
    report_section("guard", "KernelGuard's opinion (issue 16)", "\n".join(lines), args.write)


if __name__ == "__main__":
    main()
