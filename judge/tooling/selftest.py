"""`kjudge problem validate`: schema, the starter templates against the problem's rules, then every
self-test submission against its expected verdict."""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from checkers import get_checker
from judge.host.device import DeviceInfo
from judge.judging.admission import SubmissionRejected
from judge.judging.pipeline import JudgeOptions, NotRunnable, judge_source
from judge.judging.record import JudgeResult, TestReport
from judge.judging.reference import ProblemRuntimeError, Reference, derive_seed
from judge.judging.rules import check_rules
from judge.judging.stages.check import check_case, set_count
from judge.judging.warm import ROLES, UNTIMED, SlotPool, startup_env
from judge.languages import UnknownLanguage, infer_language
from judge.problem.schema import Problem, self_tests
from judge.verdicts import Verdict
from sandbox import Sandbox

# Verdicts decided before anything runs: checkable on any device.
STATIC_VERDICTS = (Verdict.CE, Verdict.RV)


@dataclass
class SelfTestOutcome:
    path: Path
    expected: Verdict
    got: Verdict | None
    status: str  # ok | FAIL | skip, or note | warn (advice: the problem is still valid)
    detail: str = ""
    wall_s: float = 0.0


def run_self_tests(problem: Problem, device: DeviceInfo, sandbox: Sandbox,
                   timing: bool = True) -> list[SelfTestOutcome]:
    """Judge every self-test submission; with `timing`, the first AC one is also timed. Each
    judging's harnesses warm up while the one before runs (judge/judging/warm.py)."""
    pool = SlotPool(sandbox, ROLES if timing else UNTIMED)
    try:
        pool.prepare(startup_env(sandbox, device))
        outcomes = _run_self_tests(problem, device, sandbox, timing, pool)
        return outcomes + thread_outcomes(problem, device) + strength_outcomes(problem, device)
    finally:
        pool.close()


def _run_self_tests(problem: Problem, device: DeviceInfo, sandbox: Sandbox, timing: bool,
                    pool: SlotPool) -> list[SelfTestOutcome]:
    outcomes = template_outcomes(problem)
    if not problem.tests_for(device.kind):
        return outcomes + [SelfTestOutcome(path.relative_to(problem.path), expected, None,
                                           "skip", f"no test point for the {device.kind} device"
                                           + (f" ({problem.spec.gpu_only})"
                                              if problem.spec.gpu_only else ""))
                           for expected, path in self_tests(problem)]
    timed_once = not timing
    for expected, path in _last_said(self_tests(problem), pool):
        rel = path.relative_to(problem.path)
        source = path.read_text()
        try:
            language = infer_language(path, source)
        except UnknownLanguage as exc:
            outcomes.append(SelfTestOutcome(rel, expected, None, "FAIL", str(exc)))
            continue
        if device.kind not in language.devices and expected not in STATIC_VERDICTS:
            outcomes.append(SelfTestOutcome(rel, expected, None, "skip",
                                            f"{language.name} needs a {'/'.join(language.devices)} "
                                            "device"))
            continue
        if language.toolchain_version(sandbox) == "missing":
            outcomes.append(SelfTestOutcome(rel, expected, None, "skip",
                                            f"the {language.name} toolchain is not installed"))
            continue
        # One accepted submission per problem is timed, which also proves the baseline runs.
        timing = expected is Verdict.AC and not timed_once
        timed_once = timed_once or timing
        # the slots warmed behind the timed one serve untimed judgings: no baseline
        pool.roles = UNTIMED if timed_once else ROLES
        try:
            result = judge_source(problem, source, language=language, device=device,
                                  sandbox=sandbox, options=JudgeOptions(timing=timing,
                                                                        pool=pool))
        except NotRunnable as exc:
            outcomes.append(SelfTestOutcome(rel, expected, None, "skip", str(exc)))
            continue
        except SubmissionRejected as exc:
            outcomes.append(SelfTestOutcome(rel, expected, None, "FAIL", str(exc)))
            continue
        status = "ok" if result.verdict is expected else "FAIL"
        detail = "" if status == "ok" else (result.message or _first_failure(result))[:300]
        if result.verdict is Verdict.SE:
            detail = result.message
        outcomes.append(SelfTestOutcome(rel, expected, result.verdict, status, detail,
                                        result.wall_s))
        if timing and result.verdict is Verdict.AC:
            outcomes += resolution_outcomes(result)
    return outcomes


def _last_said(listed: list[tuple[Verdict, Path]], pool: SlotPool):
    """The self-tests in order, the pool told before the last that nothing is judged after it
    (no slot is warmed behind it)."""
    for number, item in enumerate(listed, 1):
        if number == len(listed):
            pool.ending()
        yield item


def resolution_outcomes(result: JudgeResult) -> list[SelfTestOutcome]:
    """The timed points whose baseline calls are too short for the judge to resolve beyond its
    harness's own work (judge/measure/charging.py Floor): they do not count in the score, and
    where none is resolvable no score rises above the baseline's. Each says the call time, and
    the point's size, from which it would be."""
    timed = [t for t in result.tests if t.baseline_resolvable_from_ms and t.baseline_ms]
    short = [t for t in timed if t.baseline_ms < t.baseline_resolvable_from_ms]
    outcomes = [SelfTestOutcome(Path(f"<timing {t.name}>"), Verdict.AC, None, "note",
                                _unresolvable(t)) for t in short]
    if short and len(short) == len(timed):
        outcomes.append(SelfTestOutcome(Path("<timing>"), Verdict.AC, None, "warn",
                                        "no timed point is resolvable: no submission scores "
                                        "above the baseline; add larger points"))
    return outcomes


def _unresolvable(test: TestReport) -> str:
    factor = test.baseline_resolvable_from_ms / test.baseline_ms
    numeric = {k: v for k, v in test.params.items() if isinstance(v, int) and v > 1}
    size = ""
    if numeric:  # the largest dimension scaled: the work of most kernels grows with it
        name = max(numeric, key=numeric.get)
        size = f", e.g. {name}={math.ceil(numeric[name] * factor)}"
    return (f"not resolvable: the baseline's call ({1000 * test.baseline_ms:.1f} µs) is too "
            f"short beside the harness's own work ({1000 * (test.harness_ms or 0):.2f} µs a "
            f"call); shown, not counted in the score. Resolvable from "
            f"{1000 * test.baseline_resolvable_from_ms:.0f} µs a call: about {factor:.1f}x "
            f"the work{size}")


FILLABLE = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "int16", "int8",
            "uint8")


def strength_outcomes(problem: Problem, device: DeviceInfo) -> list[SelfTestOutcome]:
    """An answer of zeros and one of a constant (each output's median on the first sample
    point) must both be refused: a problem either passes (a near-zero reference under an
    absolute tolerance, an output that barely varies) cannot tell a kernel from a guess. On the
    CPU device only (the guesses are the same everywhere), checked here as a judging checks its
    outputs (the problem's checker on every CPU point's input sets, from a fresh secret): no
    code but the judge's runs, so no harness is started for them."""
    if device.kind != "cpu" or not problem.tests_for("cpu"):
        return []
    started = time.monotonic()
    try:
        reference = Reference(problem, "cpu")  # one for the medians and the checks
        guesses = {"all zeros": dict.fromkeys((a.name for a in problem.outputs), 0)}
        medians, constant = _medians(problem, reference)
        if medians:
            guesses["a constant"] = medians
        refused = _refused(problem, reference, guesses)
    except ProblemRuntimeError:
        return []  # the self-tests say so
    except Exception as exc:  # e.g. the problem's own checker, on an output it never expected
        return [SelfTestOutcome(Path("<guesses>"), Verdict.WA, None, "FAIL",
                                f"an answer of zeros or a constant could not be checked: "
                                f"{type(exc).__name__}: {exc}")]
    seconds = (time.monotonic() - started) / len(guesses)
    outcomes = []
    for what in guesses:
        detail = "" if refused[what] else (
            f"accepted: the checker cannot tell {what} from the reference; " + (
                "the reference's outputs are one value throughout: the problem is degenerate"
                if constant else
                "raise what the inputs make of the outputs or tighten the tolerance (an "
                "absolute tolerance over a reference near zero passes zeros)"))
        outcomes.append(SelfTestOutcome(Path(f"<{what}>"), Verdict.WA,
                                        Verdict.WA if refused[what] else Verdict.AC,
                                        "ok" if refused[what] else "FAIL", detail, seconds))
    return outcomes


def _refused(problem: Problem, reference: Reference,
             guesses: dict[str, dict[str, float]]) -> dict[str, bool]:
    """Per guess (output name -> the value every element gets), whether the checker refuses it
    on some CPU point's input set; the reference computed once for all of them."""
    spec = problem.spec
    checker = get_checker(spec.checker.name, problem.path)
    secret, refused = secrets.randbits(63), dict.fromkeys(guesses, False)
    for test in problem.tests_for("cpu"):
        for index in range(set_count(spec, test)):
            if all(refused.values()):
                return refused
            case = reference.case(test, derive_seed(secret, test.name, index))
            for what, fill in guesses.items():
                outputs = {name: _filled(out, fill.get(name, 0))
                           for name, out in case.output_specs.items()}
                refused[what] = refused[what] or not check_case(spec, checker, outputs,
                                                                case).passed
    return refused


def _filled(spec: dict, value: float) -> torch.Tensor:
    """An output of `spec` (shape, dtype) holding `value` throughout (0: every bit zero)."""
    dtype = getattr(torch, spec["dtype"])
    return torch.zeros(spec["shape"], dtype=dtype) if value == 0 else torch.full(
        spec["shape"], value, dtype=dtype)


def thread_outcomes(problem: Problem, device: DeviceInfo) -> list[SelfTestOutcome]:
    """The reference's code called on several threads at once, as the judge calls it while the
    contenders wait, must draw and compute what it does one call at a time (at the device's
    first point: sharing state is a property of the code, not of a size)."""
    tests = problem.tests_for(device.kind)
    if not tests:
        return []
    where = Path(f"<{problem.spec.reference} on threads>")
    try:
        why = Reference(problem, device.torch_name).differs_in_parallel(tests[0])
    except ProblemRuntimeError:
        return []  # the self-tests say so
    return [SelfTestOutcome(where, Verdict.AC, None, "FAIL" if why else "ok", why)]


def _medians(problem: Problem, reference: Reference) -> tuple[dict[str, float], bool]:
    """Each output's median on the first sample point, where every output can be filled, and
    whether every output there is one value throughout."""
    if any(a.dtype not in FILLABLE for a in problem.outputs):
        return {}, False
    test = next((t for t in problem.tests_for("cpu") if t.sample), problem.tests_for("cpu")[0])
    try:
        expected = reference.case(test, seed=1).expected
    except ProblemRuntimeError:
        return {}, False  # the self-tests say so
    medians = {}
    for name, tensor in expected.items():
        value = tensor.double().nanmedian().item() if tensor.numel() else 0.0
        medians[name] = (int(value) if tensor.dtype.is_floating_point is False
                         else float(value)) if value == value else 0.0
    constant = all(t.numel() == 0 or bool((t == t.flatten()[0]).all()) for t in expected.values())
    return (medians if any(medians.values()) else {}), constant  # zeros are the other guess


def package_outcomes(problem: Problem) -> list[SelfTestOutcome]:
    """Each package the problem declares (its reference imports it) must be there where the
    judge runs (an image is checked by `kjudge image check`)."""
    import importlib.util

    return [SelfTestOutcome(Path(f"<package {name}>"), Verdict.AC, None, "FAIL" if missing
                            else "ok", f"not installed here: pip install {name} (the "
                            "reference imports it)" if missing else "installed")
            for name in problem.spec.packages
            for missing in [importlib.util.find_spec(name) is None]]


def template_outcomes(problem: Problem) -> list[SelfTestOutcome]:
    """A starter template a contestant submits unchanged must not break the problem's rules,
    and the packages it declares must be installed."""
    outcomes = package_outcomes(problem)
    for path in sorted((problem.path / "templates").glob("*.*")):
        rel = path.relative_to(problem.path)
        try:
            language = infer_language(path, path.read_text())
        except UnknownLanguage as exc:
            outcomes.append(SelfTestOutcome(rel, Verdict.AC, None, "FAIL", str(exc)))
            continue
        violation = check_rules(path.read_text(), language.name, problem.spec.rules)
        outcomes.append(SelfTestOutcome(rel, Verdict.AC, Verdict.RV, "FAIL", str(violation))
                        if violation else SelfTestOutcome(rel, Verdict.AC, None, "ok",
                                                          "passes the rules"))
    return outcomes


def _first_failure(result) -> str:
    for t in result.tests:
        if t.verdict is not None and t.verdict is not Verdict.AC:
            return f"{t.name}: {t.message.strip()}"
    return ""
