"""`kjudge problem import`: a format's problems become folders that validate and whose own
baseline is accepted on the CPU device, or are refused by file, field and fix. `--draft` keeps
a folder that does not validate yet, on purpose; nothing else leaves one behind.

One source, or a whole folder of them (the format's `discover` lists what a folder holds), each
imported in a process of its own (the format's code runs at import: a crash, a hang or a stray
global stays there), several at a time, one outcome line each as it finishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from judge.host.device import detect
from judge.host.sandbox import sandbox_for
from judge.problem.importers import convert, folder_names
from judge.problem.importers.draft import ImportFailure, write
from judge.problem.schema import ProblemError, load_problem
from judge.verdicts import Verdict

STAGING = ".importing"  # beside the problems: where a folder is written and checked first
IMPORT_TIMEOUT_S = 600  # one problem: convert, write, the reference and the baseline's judging
STATUSES = ("imported", "draft", "skipped", "refused")


@dataclass
class ImportOutcome:
    source: str
    status: str  # one of STATUSES
    path: str = ""
    detail: str = ""  # why refused, what a draft lacks, or what was checked
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        where = f" -> {self.path}" if self.path else ""
        return f"{self.status:<8} {self.source}{where}" + (f": {self.detail}"
                                                           if self.detail else "")


@dataclass(frozen=True)
class ImportRequest:
    fmt: str
    root: Path  # folders go to root/<slug>
    out: Path | None = None  # this folder instead (one source)
    force: bool = False  # replace a folder already there
    draft: bool = False  # keep a folder that does not validate yet
    check: bool = True  # judge the baseline on the CPU device before keeping the folder
    sandbox: str | None = None  # the backend for that judging (default: the setting)


def import_one(request: ImportRequest, source: Path) -> ImportOutcome:
    """Convert, write, validate and check one source, in this process."""
    start = time.monotonic()
    if request.out and (skipped := _skipped(request, source, request.out)):
        return skipped
    try:
        draft = convert(request.fmt, source)
    except ImportFailure as exc:
        return ImportOutcome(str(source), "refused", detail=str(exc))
    out = request.out or request.root / draft.slug
    if skipped := _skipped(request, source, out):
        return skipped
    # written and checked aside (same folder name: it is the slug), moved into place if kept
    staging = out.parent / STAGING / out.name
    shutil.rmtree(staging, ignore_errors=True)
    try:
        write(draft, staging)
        problems = _problems(staging, request)
        checked = (f", GPU points only ({draft.gpu_only}): judged where a GPU is"
                   if draft.gpu_only else ", the baseline AC on the CPU" if request.check else "")
        outcome = ImportOutcome(str(source), "imported", str(out), notes=draft.notes,
                                detail=f"{len(draft.tests)} test points{checked}")
        if problems:
            outcome.status = "draft" if request.draft else "refused"
            outcome.detail = problems + ("" if request.draft else
                                         " (--draft keeps the folder to finish by hand)")
        if outcome.status == "refused":
            outcome.path = ""
        else:
            _move(staging, out)
    except ImportFailure as exc:
        outcome = ImportOutcome(str(source), "refused", detail=str(exc))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_if_empty(staging.parent)
    outcome.seconds = round(time.monotonic() - start, 1)
    return outcome


def _skipped(request: ImportRequest, source: Path, out: Path) -> ImportOutcome | None:
    if out.exists() and any(out.iterdir()) and not request.force:
        return ImportOutcome(str(source), "skipped", str(out),
                             "already imported (--force imports it again)")
    return None


def _move(staging: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(out)


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # another import is still using it
        folder.rmdir()


def _problems(path: Path, request: ImportRequest) -> str:
    """What stops the folder from being a problem: '' when it validates and, checked, its
    reference runs and its baseline is accepted on every CPU test point."""
    try:
        problem = load_problem(path)
    except ProblemError as exc:
        return "does not validate: " + "; ".join(str(i) for i in exc.issues)
    if not request.check:
        return ""
    if not problem.tests_for("cpu"):
        return ""  # GPU points only (said in the folder): the device self-test judges it
    return _baseline_failure(problem, request.sandbox)


def _baseline_failure(problem, sandbox_name: str | None) -> str:
    from judge.judging.reference import ProblemRuntimeError, Reference
    from judge.tooling.selftest import run_self_tests

    device = detect("cpu")
    try:
        reference = Reference(problem, "cpu")
    except ProblemRuntimeError as exc:
        return str(exc)
    for test in problem.tests_for("cpu"):
        try:
            reference.case(test, seed=1)
            if why := reference.differs_in_parallel(test):
                return why
        except ProblemRuntimeError as exc:
            return f"the reference fails on the CPU test point {test.name}: {exc}"
    outcomes = run_self_tests(problem, device, sandbox_for(device, sandbox_name), timing=False)
    failed = [o for o in outcomes if o.status == "FAIL"]
    if any(o.expected is Verdict.AC and o.got is Verdict.WA for o in failed):
        for test in problem.tests_for("cpu"):
            if why := _order_sensitivity(problem, reference, test):
                return why
    if failed:
        return "; ".join(f"{o.path} expected {o.expected.value}, got "
                         f"{o.got.value if o.got else '-'}: {o.detail}" for o in failed)
    if not any(o.status == "ok" and o.got is not None for o in outcomes):
        return "no self-test ran on the CPU"
    return ""


ILL_CONDITIONED = "disagrees with itself"  # bench/corpora.py counts these apart


def _order_sensitivity(problem, reference, test) -> str:
    """Why the reference cannot judge anything ('' when it can): its own outputs move beyond
    the tolerance when its sums run in another order (one thread against several), as
    KernelBench's EfficientNetB2 does (BatchNorm over two values after pooling to 1 x 1)."""
    import torch

    from checkers import check_outputs, get_checker

    threads, several = torch.get_num_threads(), max(torch.get_num_threads(), 2)
    expected = {}
    try:
        for count in (several, 1):
            torch.set_num_threads(count)
            inputs = reference.inputs(test, seed=1)
            expected[count] = reference.expected(test, inputs)
    finally:
        torch.set_num_threads(threads)
    tol = problem.spec.tolerance
    checker = problem.spec.checker
    report = check_outputs(get_checker(checker.name, problem.path), expected[1],
                           expected[several], inputs, rtol=tol.rtol, atol=tol.atol,
                           matched_ratio=tol.matched_ratio, args=checker.args)
    if report.passed:
        return ""
    return (f"the reference {ILL_CONDITIONED} at {test.name} when its sums run in another order "
            f"(one thread against {several}: {report.message}): the problem is "
            "ill-conditioned at these sizes and no kernel can be judged against it (fix: "
            "change the model or its sizes in the source)")


def import_many(request: ImportRequest, sources: list[Path], jobs: int | None = None,
                timeout_s: float = IMPORT_TIMEOUT_S) -> Iterator[ImportOutcome]:
    """Each of `sources` (what the format's `discover` found), `jobs` at a time, each in its
    own process: outcomes in the order they finish."""
    names = folder_names(request.fmt, sources)
    jobs = jobs or max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(jobs) as pool:
        futures = []
        for each in sources:
            out = request.root / names[each]
            if skipped := _skipped(request, each, out):  # no process started for it
                yield skipped
            else:
                futures.append(pool.submit(_in_child, request, each, out, timeout_s))
        for future in as_completed(futures):
            yield future.result()


def _in_child(request: ImportRequest, source: Path, out: Path,
              timeout_s: float) -> ImportOutcome:
    args = {**asdict(request), "root": str(request.root), "out": str(out)}
    start = time.monotonic()
    # a session of its own: on a timeout the import goes with every process it started
    with subprocess.Popen([sys.executable, "-m", __name__, json.dumps(args), str(source)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            staging = out.parent / STAGING / out.name
            shutil.rmtree(staging, ignore_errors=True)
            _remove_if_empty(staging.parent)
            return ImportOutcome(str(source), "refused", seconds=timeout_s, detail=(
                f"took over {timeout_s:.0f} s (fix: import it alone, then with --no-check, to "
                "see whether the format's code or the baseline's judging is slow)"))
    last = stdout.strip().splitlines()[-1:] or [""]
    try:
        return ImportOutcome(**json.loads(last[0]))
    except (ValueError, TypeError):
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return ImportOutcome(str(source), "refused", detail=f"the import crashed (exit "
                             f"{child.returncode}): {tail}",
                             seconds=round(time.monotonic() - start, 1))


def summary(outcomes: list[ImportOutcome]) -> str:
    counts = Counter(o.status for o in outcomes)
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) or "nothing found"


def _main(argv: list[str]) -> None:
    raw, source = json.loads(argv[0]), Path(argv[1])
    raw["root"] = Path(raw["root"])
    raw["out"] = Path(raw["out"]) if raw["out"] else None
    outcome = import_one(ImportRequest(**raw), source)
    print(json.dumps(asdict(outcome)))


def report(outcomes: Iterator[ImportOutcome], echo: Callable[[str], None]) -> list[ImportOutcome]:
    done = []
    for outcome in outcomes:
        echo(outcome.line())
        done.append(outcome)
    return done


if __name__ == "__main__":
    _main(sys.argv[1:])
