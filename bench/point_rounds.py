"""Where a timed point's seconds go: `kjudge judge` of one submission with `interleave`,
`FreshRounds.begin`/`end`, the turns and the flushes wrapped and timed, per test point (rounds
run, calls a batch, seconds in each part), and the record's target and achieved error per point.

    python bench/point_rounds.py [--problem vector_add] [--source solutions/AC/loop.cpp]
                                 [--sandbox bwrap] [--runs 2]

Prints only (BENCHMARKS.md "Each point timed to what it weighs in the score" quotes it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# run in a child process: the wrappers must be in place before the judge imports the loop
CHILD = """
import collections, sys, time
from judge.measure import flusher, point as engine, rounds as timing
from judge.measure import fresh_rounds
spent, count = collections.defaultdict(float), collections.Counter()

def wrap(owner, name, label):
    original = getattr(owner, name)
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - started
            count[label] += 1
    setattr(owner, name, timed)

wrap(fresh_rounds.FreshRounds, "begin", "draw and write")
wrap(fresh_rounds.FreshRounds, "end", "keep and sample")
wrap(timing, "_turn", "turns")
wrap(flusher.CacheFlusher, "flush", "flushes")
interleave = engine.interleave

def point(plan):
    spent.clear(); count.clear()
    started = time.perf_counter()
    got = interleave(plan)
    total = time.perf_counter() - started
    parts = ", ".join(f"{label} {spent[label]:.2f} s" for label in spent)
    print(f"POINT {total:.2f} s, {plan.rounds.rounds} rounds, {got['submission'].calls[-1]} "
          f"calls a batch: {parts}", file=sys.stderr)
    return got

engine.interleave = point
from judge.cli import main
sys.argv = ["kjudge", "judge", *sys.argv[1:]]
main()
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem", default="vector_add")
    parser.add_argument("--source", default="solutions/AC/loop.cpp")
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    folder = ROOT / "problems" / args.problem
    for run in range(args.runs):
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-c", CHILD, str(folder),
                              str(folder / args.source), "--json", "--sandbox", args.sandbox],
                             cwd=ROOT, capture_output=True, text=True, check=False)
        lines = [line[6:] for line in out.stderr.splitlines() if line.startswith("POINT ")]
        try:
            record = json.loads(out.stdout)
        except json.JSONDecodeError:
            raise SystemExit(f"kjudge judge failed:\n{out.stderr[-2000:]}") from None
        print(f"judging {run + 1}: {time.monotonic() - started:.1f} s, timing phase "
              f"{record['phases'].get('timing', 0):.2f} s, points in the order timed:")
        for line in lines:
            print(f"  {line}")
        for t in record["tests"]:
            print(f"  {t['name']}: {t['samples']} scored rounds, target {t.get('target_rse')}, "
                  f"reached {t.get('speedup_rse')}")


if __name__ == "__main__":
    main()
