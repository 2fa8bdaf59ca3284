"""How close each problem's baseline comes to failing its own tolerance, over many seeds.

    python bench/baseline_margin.py [--seeds 40] [--problems a b] [--device cpu]

The pipeline stops with SE when the baseline is wrong on a test point, so a baseline must pass
with a margin on every seed, not only on the seeds CI happened to draw. For every test point of
the device this runs the reference and the baseline in-process on `--seeds` seeds and prints the
worst matched ratio (the problem's `matched_ratio` must stay below it). Exit 1 if any seed fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checkers import get_checker  # noqa: E402
from judge.judging.reference import Reference, load_module  # noqa: E402
from judge.problem.schema import load_problem  # noqa: E402


def worst_ratio(problem, device: str, seeds: int) -> list[tuple[str, float]]:
    reference = Reference(problem, device)
    baseline = load_module(problem.path / problem.spec.baseline)
    checker = get_checker(problem.spec.checker.name, problem.path)
    tol = problem.spec.tolerance
    rows = []
    for test in problem.tests_for(device):
        worst = 1.0
        for seed in range(seeds):
            case = reference.case(test, seed)
            outputs = {n: torch.empty(s["shape"], dtype=getattr(torch, s["dtype"]), device=device)
                       for n, s in case.output_specs.items()}
            args = {a.name: (outputs[a.name] if a.role == "output" else case.inputs[a.name])
                    for a in problem.spec.signature}
            baseline.run_kernel(*args.values())
            for name, expected in case.expected.items():
                report = checker(outputs[name].cpu(), expected, rtol=tol.rtol, atol=tol.atol,
                                 matched_ratio=tol.matched_ratio, **problem.spec.checker.args)
                worst = min(worst, report.matched_ratio)
        rows.append((test.name, worst))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--problems", nargs="*")
    args = parser.parse_args()
    slugs = args.problems or sorted(p.parent.name for p in (ROOT / "problems").glob("*/problem.yaml"))
    failed = False
    for slug in slugs:
        problem = load_problem(ROOT / "problems" / slug)
        for name, worst in worst_ratio(problem, args.device, args.seeds):
            ok = worst >= problem.spec.tolerance.matched_ratio
            failed = failed or not ok
            print(f"{slug:16} {name:24} worst matched ratio {worst:.6f} "
                  f"(needs {problem.spec.tolerance.matched_ratio}) {'ok' if ok else 'FAIL'}",
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
