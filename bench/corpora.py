"""Every public kernel problem imported as an organizer would: `kjudge problem import` of a whole
corpus, each problem kept only when it validates and its own baseline is AC on the CPU device
while an answer of zeros and a constant answer are refused (tooling/importing.py's check); a
problem whose reference cannot run on a CPU (or whose weights are too large for one) is kept
with GPU points only, counted apart.

    git clone https://github.com/ScalingIntelligence/KernelBench /tmp/KernelBench
    git clone https://github.com/gpu-mode/reference-kernels /tmp/reference-kernels
    python bench/corpora.py --kernelbench /tmp/KernelBench --gpumode /tmp/reference-kernels \
        [--levels 1,2,3] [--jobs 2] [--sandbox bwrap] [--results corpora.jsonl] [--write]

With --results, each outcome is appended to that file as it finishes and a run again imports
only what the file lacks (a run spread over several sittings; delete the file to start over).
The corpora stay outside the repository. In scope: single-GPU problems whose dtypes the judge
has (a task.yml with multi_gpu, or a dtype refused as having no counterpart, is out of scope);
every refusal is listed with its reason. A problem no kernel can be judged on (its reference one
value throughout, or moving beyond the tolerance with the order of its own sums) is counted
apart. A reference's packages (einops for level 3's Mamba2) must be installed where the judge
runs, as the refusal says.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from judge.problem.importers import discover  # noqa: E402
from judge.tooling.importing import (  # noqa: E402
    ILL_CONDITIONED,
    ImportOutcome,
    ImportRequest,
    import_many,
)

# what a refusal says when the problem is out of scope: several GPUs, a dtype this judge does
# not have (AMD's fnuz fp8), a package only AMD GPUs have, an interface of its own (two entry
# points and its own eval.py instead of custom_kernel)
OUT_OF_SCOPE = ("multi_gpu", "has no counterpart here", "imports aiter", "not the format's")
# a problem no kernel can be judged on: its reference one value throughout (any constant passes),
# or moving beyond the tolerance with the order of its own sums
UNJUDGEABLE = ("one value throughout", ILL_CONDITIONED)


def sections(args) -> list[tuple[str, str, Path]]:
    found = []
    if args.kernelbench:
        for level in args.levels.split(","):
            found.append((f"KernelBench level {level}", "kernelbench",
                          Path(args.kernelbench) / "KernelBench" / f"level{level}"))
    if args.gpumode:
        found.append(("GPU MODE reference-kernels", "gpumode", Path(args.gpumode) / "problems"))
    return found


def commit(path: Path) -> str:
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    return done.stdout.strip() or "(not a git checkout)"


def run_section(name: str, fmt: str, folder: Path, args) -> list[ImportOutcome]:
    sources = discover(fmt, folder)
    done = [o for o in saved(args.results, name) if Path(o.source) in sources]
    pending = [s for s in sources if s not in {Path(o.source) for o in done}]
    with tempfile.TemporaryDirectory(prefix="kjudge-corpus-") as out:
        request = ImportRequest(fmt, Path(out), sandbox=args.sandbox)
        for outcome in import_many(request, pending, jobs=args.jobs):
            print(outcome.line()[:300], flush=True)
            done.append(outcome)
            if args.results:
                with open(args.results, "a") as file:
                    file.write(json.dumps({"section": name, **asdict(outcome)}) + "\n")
    return done


def saved(results: str | None, section: str) -> list[ImportOutcome]:
    if not results or not Path(results).is_file():
        return []
    rows = [json.loads(line) for line in Path(results).read_text().splitlines() if line]
    return [ImportOutcome(**{k: v for k, v in row.items() if k != "section"})
            for row in rows if row["section"] == section]


def in_scope(outcome: ImportOutcome) -> bool:
    return not (outcome.status == "refused"
                and any(w in outcome.detail for w in (*OUT_OF_SCOPE, *UNJUDGEABLE)))


def table(results: list[tuple[str, list[ImportOutcome]]]) -> str:
    lines = ["| corpus | problems | out of scope | degenerate or ill-conditioned | in scope | "
             "imported | of which GPU points only | refused | rate | median s a problem |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, outcomes in results:
        scoped = [o for o in outcomes if in_scope(o)]
        degenerate = sum(any(w in o.detail for w in UNJUDGEABLE) for o in outcomes
                         if o.status == "refused")
        ok = [o for o in scoped if o.status == "imported"]
        gpu_only = sum("GPU points only" in o.detail for o in ok)
        seconds = sorted(o.seconds for o in outcomes) or [0.0]
        rate = f"{100 * len(ok) / len(scoped):.0f} %" if scoped else "-"
        lines.append(f"| {name} | {len(outcomes)} | {len(outcomes) - len(scoped) - degenerate} "
                     f"| {degenerate} | {len(scoped)} | {len(ok)} | {gpu_only} | "
                     f"{len(scoped) - len(ok)} | {rate} | {seconds[len(seconds) // 2]:.1f} |")
    return "\n".join(lines)


def refusals(results: list[tuple[str, list[ImportOutcome]]]) -> str:
    lines = []
    for name, outcomes in results:
        for o in sorted(outcomes, key=lambda o: o.source):
            if o.status != "imported":
                scope = "" if in_scope(o) else " (unjudgeable)" if any(
                    w in o.detail for w in UNJUDGEABLE) else " (out of scope)"
                lines.append(f"- {name}: `{Path(o.source).name}`{scope}: {o.detail[:400]}")
    return "\n".join(lines) or "- none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", help="a checkout of ScalingIntelligence/KernelBench")
    parser.add_argument("--gpumode", help="a checkout of gpu-mode/reference-kernels")
    parser.add_argument("--levels", default="1,2,3")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--results", help="a JSONL file of outcomes: appended, and resumed from")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    results = [(name, run_section(name, fmt, folder, args))
               for name, fmt, folder in sections(args)]
    busy = sum(o.seconds for _, outcomes in results for o in outcomes)
    commits = ", ".join(f"{Path(p).name} {commit(Path(p))}"
                        for p in (args.kernelbench, args.gpumode) if p)
    block = (f"`python bench/corpora.py --kernelbench KernelBench --gpumode reference-kernels "
             f"--levels {args.levels} --jobs {args.jobs} --sandbox {args.sandbox}` ({commits}; "
             f"{busy / 60:.0f} min of imports on this machine, {args.jobs} at a time)\n\n" + table(results)
             + "\n\nNot imported, and why:\n\n" + refusals(results))
    report_section("corpora", "Public corpora imported", block, write=args.write)


if __name__ == "__main__":
    main()
