"""The device self-test: every problem validated on a device, every AC self-test judged N times.

    python bench/gpu_selftest.py [--device cuda] [--repeats 3] [--problems a b] [--budget-s 450]
                                 [--markdown FILE] [--write]

1. Validation: each problem's schema and all its self-test submissions (AC, WA, CE, RV, ...)
   against their expected verdicts on the device (self-tests for another device are skipped).
2. Reproducibility: each AC self-test that runs on the device is judged `--repeats` times with
   timing on `--timed-tests` of the device's test points (smallest to largest; 0 = all, the
   validation above already checked all of them); the table gives the problem speedup (median
   of the repeats), its spread ((max - min) / median) and the judge overhead per judging (wall
   time minus the time spent in run_kernel and the baseline).
Judgings not started within `--budget-s` are listed as skipped. Exit code 1 when a self-test got
another verdict than expected or a repeat was not AC. `deploy/gpu-selftest.sh` runs it on a GPU
machine; CI runs it on the CPU for one problem.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from judge.host.device import detect  # noqa: E402
from judge.host.sandbox import sandbox_for  # noqa: E402
from judge.judging.pipeline import JudgeOptions, judge_source  # noqa: E402
from judge.judging.selftest import run_self_tests  # noqa: E402
from judge.languages import infer_language  # noqa: E402
from judge.problem.schema import Problem, ProblemError, load_problem, self_tests  # noqa: E402
from judge.verdicts import Verdict  # noqa: E402


def timed_subset(problem: Problem, device_kind: str, count: int) -> list[str] | None:
    """`count` of the device's timed test points, evenly spread from smallest to largest (all if 0)."""
    points = [t.name for t in problem.tests_for(device_kind) if t.timed and not t.sample]
    if count <= 0 or len(points) <= count:
        return None
    step = (len(points) - 1) / (count - 1) if count > 1 else 0
    return sorted({points[round(i * step)] for i in range(count)}, key=points.index)


def repeat_row(problem: Problem, path: Path, device, sandbox, repeats: int,
               tests: list[str] | None) -> dict:
    source = path.read_text()
    language = infer_language(path, source)
    speedups, overheads, verdicts = [], [], []
    for _ in range(repeats):
        result = judge_source(problem, source, language=language, device=device, sandbox=sandbox,
                              options=JudgeOptions(timing=True, tests=tests))
        verdicts.append(result.verdict.value)
        overheads.append(result.wall_s - result.kernel_s)
        if result.verdict is Verdict.AC and result.speedup:
            speedups.append(result.speedup)
    median = statistics.median(speedups) if speedups else None
    spread = (max(speedups) - min(speedups)) / median if len(speedups) > 1 else None
    return {"problem": problem.slug, "language": language.name, "file": path.name,
            "tests": len(tests) if tests else len(problem.tests_for(device.kind)),
            "verdict": "/".join(sorted(set(verdicts))), "speedup": median, "spread": spread,
            "overhead_s": statistics.median(overheads), "ok": set(verdicts) == {"AC"}}


def fmt(value, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


def table(rows: list[dict]) -> str:
    lines = ["| problem | language | submission | test points | verdict | speedup | spread | "
             "judge overhead |", "|---|---|---|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['problem']} | {r['language']} | {r['file']} | {r['tests']} | "
                     f"{r['verdict']} | "
                     f"{fmt(r['speedup'], '.3f')} | "
                     f"{'-' if r['spread'] is None else format(100 * r['spread'], '.2f') + ' %'} | "
                     f"{fmt(r['overhead_s'], '.1f')} s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--problems", nargs="*", help="slugs under problems/ (default: all)")
    parser.add_argument("--budget-s", type=float, default=450.0)
    parser.add_argument("--timed-tests", type=int, default=3,
                        help="test points per repeated judging, smallest to largest (0: all)")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument("--write", action="store_true", help="put the table in BENCHMARKS.md")
    args = parser.parse_args(argv)

    started = time.monotonic()
    device = detect(args.device)
    sandbox = sandbox_for(device, args.sandbox)
    slugs = args.problems or sorted(p.parent.name for p in (ROOT / "problems").glob("*/problem.yaml"))
    failures, rows, skipped = [], [], []
    for slug in slugs:
        try:
            problem = load_problem(ROOT / "problems" / slug)
        except ProblemError as exc:
            failures.append(f"{slug}: invalid: {exc}")
            continue
        for outcome in run_self_tests(problem, device, sandbox, timing=False):
            print(f"{slug:16} {outcome.status:4} expected {outcome.expected.value:3} got "
                  f"{outcome.got.value if outcome.got else '-':3} {outcome.path} {outcome.detail}",
                  flush=True)
            if outcome.status == "FAIL":
                failures.append(f"{slug}/{outcome.path}: expected {outcome.expected.value}, got "
                                f"{outcome.got.value if outcome.got else '-'} {outcome.detail}")
        for expected, path in self_tests(problem):
            language = infer_language(path, path.read_text())
            if expected is not Verdict.AC or device.kind not in language.devices:
                continue
            if time.monotonic() - started > args.budget_s:
                skipped.append(f"{slug}/{path.name}")
                continue
            subset = timed_subset(problem, device.kind, args.timed_tests)
            row = repeat_row(problem, path, device, sandbox, args.repeats, subset)
            print(f"{slug:16} repeat {row}", flush=True)
            rows.append(row)
            if not row["ok"]:
                failures.append(f"{slug}/{path.name}: verdicts {row['verdict']} over the repeats")

    report = (f"{date.today()} · {device.model} ({device.kind}, arch {device.arch or '-'}) · "
              f"sandbox {sandbox.name} · {args.repeats} judgings per AC self-test · "
              f"{time.monotonic() - started:.0f} s in all\n\n{table(rows)}\n")
    if skipped:
        report += f"\nNot judged within the {args.budget_s:.0f} s budget: {', '.join(skipped)}\n"
    if failures:
        report += "\nFailures:\n" + "".join(f"- {f}\n" for f in failures)
    command = "`bash deploy/gpu-selftest.sh`" if device.kind != "cpu" else (
        f"`python bench/gpu_selftest.py --device {args.device} --repeats {args.repeats}`")
    if args.markdown:
        args.markdown.write_text(report)
    report_section(f"selftest-{device.kind}", f"Device self-test ({device.kind})",
                   f"Command: {command}\n\n{report}", args.write)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
