"""The spread of one source's score over several judgings (issue 42: "keep the spread of one
source over five judgings from growing"), optionally alternating with another checkout of the
judge (`--against DIR`, e.g. a `git worktree` of an earlier commit) in the same minutes, so that
the machine's drift weighs on both alike.

    python bench/judging_spread.py [--problem problems/softmax] [--source baseline.py]
                                   [--runs 5] [--against DIR] [--sandbox bwrap] [--no-write]

Each judging runs in a child process whose imports come from the tree judged (this one, or
DIR), on the CPU device, as `kjudge judge PROBLEM SOURCE --sandbox SANDBOX` judges. Writes its
block into BENCHMARKS.md (section "Spread of one source over judgings").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402

CHILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from judge.host.device import detect
from judge.host.sandbox import sandbox_for
from judge.judging.pipeline import JudgeOptions, judge_source
from judge.problem.schema import load_problem
problem, source = load_problem(Path(sys.argv[2])), Path(sys.argv[3])
device = detect("cpu")
result = judge_source(problem, source.read_text(), filename=source.name, device=device,
                      sandbox=sandbox_for(device, sys.argv[4]), options=JudgeOptions(timing=True))
print(json.dumps({"verdict": result.verdict.name, "speedup": result.speedup,
                  "unresolvable": result.applied.get("unresolvable_points", [])}))
"""


def judge_once(tree: Path, problem: str, source: str, sandbox: str) -> dict:
    """One judging by the judge in `tree`, of `tree`'s own copy of the problem."""
    folder = tree / problem
    done = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(folder),
                           str(folder / source), sandbox], cwd=tree, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def commit(tree: Path) -> str:
    """The short commit a tree is checked out at (with `+` where it has changes)."""
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+" if dirty else "")


def spread(scores: list[float]) -> float:
    """(highest - lowest) / median, in %."""
    ordered = sorted(scores)
    return 100 * (ordered[-1] - ordered[0]) / ordered[len(ordered) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="problems/softmax")
    parser.add_argument("--source", default="baseline.py")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", type=Path)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    trees = {f"this judge ({commit(ROOT)})": ROOT,
             **({commit(args.against): args.against} if args.against else {})}
    got: dict[str, list[dict]] = {name: [] for name in trees}
    started = time.monotonic()
    for _ in range(args.runs):
        for name, tree in trees.items():
            got[name].append(judge_once(tree, args.problem, args.source, args.sandbox))
    lines = ["| judge | scores (speedup) | spread | points not resolvable (judgings) |", "|---|---|---|---|"]
    for name, runs in got.items():
        scores = [run["speedup"] for run in runs]
        unresolvable = Counter(p for run in runs for p in run["unresolvable"])
        counts = ", ".join(f"{p} {k}/{len(runs)}" for p, k in sorted(unresolvable.items()))
        lines.append(f"| {name} | {', '.join(f'{s:.3f}' for s in scores)} "
                     f"| {spread(scores):.1f} % | {counts or '-'} |")
    against = f" --against {args.against}" if args.against else ""
    block = (f"Measured {date.today()} on {platform.machine()} ({os.cpu_count()} CPUs), "
             f"{time.monotonic() - started:.0f} s, with `python bench/judging_spread.py "
             f"--problem {args.problem} --source {args.source} --runs {args.runs}"
             f"{against} --sandbox {args.sandbox}` (the judgings alternate).\n\n"
             + "\n".join(lines))
    report_section("judging-spread", "Spread of one source over judgings (issue 42)", block,
                   write=not args.no_write)


if __name__ == "__main__":
    main()
