"""Check correctness: each test point's inputs and expected outputs (from a secret seed, in the
judge's own process), the submission's calls on them, and its outputs against the expected ones
through the problem's checker, outside the contestant's process. Trusted code."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from checkers import CheckReport, check_outputs, checks_whole_calls
from judge.harness import protocol
from judge.judging import dequant
from judge.judging.contender import Contender
from judge.judging.context import STARTUP_GRACE_S, Judging, RunFailure
from judge.judging.record import TestReport
from judge.judging.reference import ProblemRuntimeError, TestCase, derive_seed
from judge.measure import fresh_rounds
from judge.problem.schema import ProblemSpec, TestPoint
from judge.verdicts import Verdict

# what a test point's record takes over from its checker's report (judge/judging/record.py)
CHECK_FIELDS = tuple(f.name for f in dataclasses.fields(CheckReport)
                     if f.name in TestReport.__dataclass_fields__
                     and f.name not in ("worst", "message"))
# A timed call's outputs from this size on are checked on every CPU at once (check_rounds):
# 28 ms a check alone, 15 ms on two threads, for vector_add's 4 MB point here
PARALLEL_CHECK_BYTES = 128 << 10


def cases(j: Judging, test: TestPoint) -> list[TestCase]:
    """The point's input sets (saved where the harnesses load them) and expected outputs."""
    made = []
    for index in range(set_count(j.spec, test)):
        case = j.reference.case(test, derive_seed(j.secret, test.name, index))
        path = j.workdir / "inputs" / test.name / f"{index}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({k: (v.cpu() if isinstance(v, torch.Tensor) else v)
                    for k, v in case.inputs.items()}, path)
        if not checks_whole_calls(j.checker):  # else the checker reads them
            case.inputs.clear()  # the file holds them now: free the judge's copy
        made.append(case)
    if j.device.kind != "cpu":
        torch.cuda.empty_cache()
    return made


def set_count(spec: ProblemSpec, test: TestPoint) -> int:
    """How many input sets a point's correctness is checked on."""
    return spec.timing.input_sets if test.timed else 1


def report(test: TestPoint, verdict: Verdict | None, message: str = "",
           check: CheckReport | None = None) -> TestReport:
    """A test point's record, with the checker's figures under the same names."""
    made = TestReport(test.name, test.sample, verdict, message, params=dict(test.params))
    if check is not None:
        for key in CHECK_FIELDS:
            setattr(made, key, getattr(check, key))
        made.worst = [vars(w) for w in check.worst]
        made.message = message or check.message
    return made


def check_all(j: Judging, sub: Contender, tests: list[TestPoint],
              cases: dict[str, list[TestCase]]) -> None:
    """Every point in order; after a WA the rest still run, after any other failure not."""
    alive = True
    for test in tests:
        if not alive:
            j.result.tests.append(report(test, None, "not run"))
            continue
        try:
            check = check_test(j, sub, test, cases[test.name])
            verdict = Verdict.AC if check.passed else Verdict.WA
            j.result.tests.append(report(test, verdict, check=check))
        except RunFailure as failure:
            j.result.tests.append(report(test, failure.verdict, failure.message))
            alive = failure.verdict is Verdict.WA


def load(j: Judging, who: Contender, test: TestPoint, cases: list[TestCase],
         shared: dict | None = None) -> None:
    """Have a contender load a point's input sets (and, timed, map the shared files)."""
    files = [j.sandbox.path(j.inputs_mount, test.name, f"{i}.pt") for i in range(len(cases))]
    reply = who.request("load", STARTUP_GRACE_S, test=test.name, files=files,
                        outputs=cases[0].output_specs, shared=shared)
    if shared is not None and j.device.kind != "cpu":
        setup = j.result.applied.setdefault("timing_setup", {})
        setup["pinned_copies"] = setup.get("pinned_copies", True) and reply.get("pinned")


def warm(j: Judging, who: Contender, test: TestPoint) -> None:
    """A JIT language (Triton on a GPU, TileLang everywhere: `Language.jit_devices`) compiles
    at the first call of every new shape: that call, neither checked nor timed, may also take
    the compile time limit; every later call has the run limit alone."""
    if who.jit and test.name not in who.warmed:
        who.request("warm", j.spec.limits.compile_s + j.spec.limits.run_s, set=0)
        who.warmed.add(test.name)


def check_test(j: Judging, sub: Contender, test: TestPoint,
               cases: list[TestCase]) -> CheckReport:
    """One call per input set; the first failing set's report, else the first's."""
    load(j, sub, test, cases)
    warm(j, sub, test)
    reports = []
    for index, case in enumerate(cases):
        reply = sub.request("run", j.spec.limits.run_s, set=index,
                            save=sub.out_path(test.name, f"check{index}.raw"))
        j.kernel_ms += reply.get("ms", 0.0)
        reports.append(compare(j, sub.host_out(test.name, f"check{index}.raw"), case,
                               within=sub.scratch.host))
    return next((r for r in reports if not r.passed), reports[0])


def compare(j: Judging, path: Path, case: TestCase, within: str | None = None) -> CheckReport:
    """Check an output file (raw, see judge/harness/protocol.py) written by the sandboxed side
    (under `within`, its scratch directory) against the expected outputs."""
    outputs = {name: torch.empty(spec["shape"], dtype=getattr(torch, spec["dtype"]))
               for name, spec in case.output_specs.items()}
    try:
        protocol.read_raw(str(path), [(t.data_ptr(), t.numel() * t.element_size())
                                      for t in outputs.values()], within=within)
    except (OSError, ValueError) as exc:  # missing, a link, truncated, padded
        raise RunFailure(Verdict.WA, f"the outputs were not written back as expected "
                                     f"({exc})") from None
    return check_case(j.spec, j.checker, outputs, case)


def check_case(spec: ProblemSpec, checker, outputs: dict[str, torch.Tensor],
               case: TestCase) -> CheckReport:
    """`outputs` for one input set against its expected ones: the problem's checker, its
    tolerance and arguments, scaled outputs compared as the values they stand for."""
    tol, signature = spec.tolerance, spec.signature

    def comparable(got: dict, expected: dict) -> tuple[dict, dict]:
        try:
            return dequant.comparable(got, signature), dequant.comparable(expected, signature)
        except ValueError as exc:  # the reference's scales do not fit its own outputs
            raise ProblemRuntimeError(f"the reference's scaled outputs: {exc}") from exc

    return check_outputs(checker, outputs, case.expected, case.inputs, rtol=tol.rtol,
                         atol=tol.atol, matched_ratio=tol.matched_ratio, comparable=comparable,
                         args=spec.checker.args)


def round_seed(j: Judging, test: TestPoint, index: int, slot: int) -> int:
    return derive_seed(j.secret, test.name, f"timed{index}.{slot}")


def check_rounds(j: Judging, test: TestPoint, rounds: fresh_rounds.FreshRounds) -> None:
    """Check the outputs of each contender's kept calls (drawn once the calls were over);
    large ones on every CPU at once (the contenders wait; small ones pay more in threads
    than they gain: 0.13 ms a check alone, 0.34 ms on two threads for a 15-float softmax;
    `python bench/round_cost.py` measures a check at every point)."""
    def check_call(kept: tuple[int, int, Path]) -> CheckReport:
        index, slot, path = kept
        inputs = j.reference.inputs(test, round_seed(j, test, index, slot))
        return compare(j, path, TestCase(inputs, j.reference.expected(test, inputs),
                                               j.reference.output_specs(test)))

    parallel = rounds.outputs["submission"].size >= PARALLEL_CHECK_BYTES
    checks = fresh_rounds.cpu_pool()[0].map if parallel else map
    for role in ("baseline", "submission"):
        kept = rounds.kept(role)
        for each, checked in zip(kept, list(checks(check_call, kept))):
            if checked.passed:
                continue
            if parallel:  # a failure is the run's only if the check alone agrees: a problem's
                # code sharing state between threads failed a correct baseline (validate says so)
                checked = check_call(each)
                if checked.passed:
                    continue
            index, slot, _ = each
            if role == "baseline":
                raise RunFailure(Verdict.SE, f"the baseline is wrong on {test.name}, timed "
                                             f"round {index + 1}: {checked.message}")
            suspect = (index, slot) in rounds.suspects[role]
            raise RunFailure(Verdict.WA, f"the outputs of a timed call (round {index + 1}, "
                                         f"call {slot + 1} of its batch"
                                         f"{', one that looked skipped' if suspect else ''}; "
                                         f"{len(kept)} of {rounds.seen[role]} calls were "
                                         f"checked: a random draw and any whose outputs "
                                         f"looked skipped) differ from the reference: "
                                         f"{checked.message}")
