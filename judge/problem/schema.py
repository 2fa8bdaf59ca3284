"""Problem folders: the `problem.yaml` schema, loading, and errors that name file, field and fix.

A problem folder (see docs/problems.md, "Adding a problem") holds problem.yaml, statement.md, the trusted
reference (reference.py), a baseline, one starter template per allowed language under
templates/, and self-test submissions under solutions/<expected verdict>/.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from checkers import BUILTIN_CHECKERS, TOLERANCE, checker_params
from judge.harness.protocol import DTYPES
from judge.host.device import DEVICE_KINDS
from judge.languages import LANGUAGES as REGISTRY
from judge.problem import exprs
from judge.signature import Arg, Identifier, Strict
from judge.verdicts import Verdict

PROBLEM_FILE = "problem.yaml"
TODO_MARKER = "KJUDGE-TODO"
LANGUAGES = tuple(REGISTRY)
DEVICES = DEVICE_KINDS



class Tolerance(Strict):
    rtol: float = Field(1e-5, ge=0)
    atol: float = Field(1e-8, ge=0)
    matched_ratio: float = Field(0.99, gt=0, le=1)


class Limits(Strict):
    compile_s: float = Field(60, gt=0)
    run_s: float = Field(10, gt=0, description="wall time for one call of run_kernel")
    memory_mb: int = Field(4096, gt=0)
    gpu_memory_mb: int | None = Field(None, gt=0, description="device memory of the submission's "
                                      "process (default: 40 % of the device's)")
    output_kb: int = Field(64, gt=0, description="stdout+stderr of the submission")
    source_kb: int = Field(256, gt=0)


class Metrics(Strict):
    bytes: int | str | None = None
    flops: int | str | None = None
    # the arithmetic the flops run in: picks the device peak for the "fraction of peak" figure
    precision: Literal["fp16", "bf16", "fp8", "int8", "tf32", "fp32", "fp64"] = "fp16"


class Scoring(Strict):
    aggregate: Literal["total_time", "geomean"] = "total_time"
    score: str = "100 * speedup"


class Timing(Strict):
    warmup_s: float = Field(0.05, ge=0)
    min_reps: int = Field(5, ge=3)
    max_reps: int = Field(50, ge=3)
    max_s: float = Field(3.0, gt=0, description="timing budget of the test point that weighs "
                         "most in the score; a lighter one's is in proportion to its weight "
                         "against that one's (judge/measure/scoring.py point_time_cap)")
    target_rse: float = Field(0.01, gt=0)
    input_sets: int = Field(2, ge=1, le=8, description="input sets checked before timing (the "
                            "warm-up cycles through them; every timed call gets fresh inputs)")
    checked_calls: int = Field(8, ge=1, le=64, description="timed calls whose outputs are "
                               "checked at least, drawn at random once the calls are over (all "
                               "of them when there are fewer; more where outputs are small)")

    @model_validator(mode="after")
    def _check(self) -> Timing:
        if self.min_reps > self.max_reps:
            raise ValueError("min_reps must not exceed max_reps")
        return self


ArgValue = int | float | bool | str


class CheckerSpec(Strict):
    """The special judge: a built-in checker's name or a .py file of the folder, and the
    keyword arguments it takes beyond the tolerance (`checker: name` is `{name: name}`)."""

    name: str = "allclose"
    args: dict[Identifier, ArgValue | list[ArgValue]] = {}


class TestSpec(Strict):
    name: str
    params: dict[Identifier, int | float | bool | str] = {}
    matrix: dict[Identifier, list[int | float | bool | str]] = {}
    sample: bool = False
    timed: bool = True
    devices: list[Literal[DEVICES]] = list(DEVICES)  # type: ignore[valid-type]


class Rule(Strict):
    id: Identifier
    message: str
    languages: list[Literal[LANGUAGES]] = list(LANGUAGES)  # type: ignore[valid-type]
    regex: str | None = None
    forbid_imports: list[str] = []
    forbid_calls: list[str] = []
    # allow-list form (Python languages): outside its kernels the source may call only these
    # PyTorch functions (`empty`, `torch.empty`) and tensor methods (`.view`); `plumbing` names
    # allocation, views, copies and metadata (judge/judging/rules.py)
    allow_torch: list[str] | None = None

    @model_validator(mode="after")
    def _check(self) -> Rule:
        if not (self.regex or self.forbid_imports or self.forbid_calls
                or self.allow_torch is not None):
            raise ValueError("a rule needs `regex`, `forbid_imports`, `forbid_calls` or "
                             "`allow_torch`")
        if self.regex:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"`regex` does not compile: {exc}") from None
        return self


class ProblemSpec(Strict):
    title: str
    languages: list[Literal[LANGUAGES]]  # type: ignore[valid-type]
    signature: list[Arg]
    reference: str = "reference.py"
    baseline: str = "baseline.py"
    checker: CheckerSpec = CheckerSpec()
    tolerance: Tolerance = Tolerance()
    limits: Limits = Limits()
    metrics: Metrics = Metrics()
    scoring: Scoring = Scoring()
    timing: Timing = Timing()
    tests: list[TestSpec] = Field(min_length=1)
    rules: list[Rule] = []
    # why the problem has no CPU test point (its reference needs a GPU: torch._scaled_mm on fp4);
    # then none is asked for, and the CPU device cannot judge it
    gpu_only: str | None = None
    # Python packages the reference and the baseline import beyond torch (einops): `kjudge problem
    # validate` and `kjudge image check` say where one is missing
    packages: list[str] = []

    @field_validator("checker", mode="before")
    @classmethod
    def _checker_by_name(cls, value):
        return {"name": value} if isinstance(value, str) else value


@dataclass(frozen=True)
class TestPoint:
    name: str
    params: dict[str, Any]
    sample: bool
    timed: bool
    devices: tuple[str, ...]


@dataclass(frozen=True)
class ProblemIssue:
    file: str
    field: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}" + (f" (fix: {self.fix})" if self.fix else "")


class ProblemError(Exception):
    def __init__(self, path: Path, issues: list[ProblemIssue]):
        self.path = path
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))


@dataclass(frozen=True)
class Problem:
    path: Path
    spec: ProblemSpec
    tests: tuple[TestPoint, ...]
    version: str = field(compare=False)

    @property
    def slug(self) -> str:
        return self.path.name

    @property
    def inputs(self) -> list[Arg]:
        return [a for a in self.spec.signature if a.role == "input"]

    @property
    def outputs(self) -> list[Arg]:
        return [a for a in self.spec.signature if a.role == "output"]

    def tests_for(self, device: str) -> list[TestPoint]:
        kind = device.split(":")[0]
        return [t for t in self.tests if kind in t.devices]

    def template_path(self, language: str) -> Path | None:
        found = sorted((self.path / "templates").glob(f"{language}.*"))
        return found[0] if found else None


def _fix_for(error: dict) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "remove this key or correct its spelling"
    if kind == "missing":
        return "add this key"
    if kind == "literal_error":
        return "use one of the values listed"
    return "see docs/problems.md, 'Adding a problem', for the schema"


def _field_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("function-", "literal[", "int", "float", "str", "bool")):
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def expand_tests(spec: ProblemSpec) -> list[TestPoint]:
    points: list[TestPoint] = []
    for test in spec.tests:
        keys = list(test.matrix)
        for combo in itertools.product(*(test.matrix[k] for k in keys)) if keys else [()]:
            params = {**test.params, **dict(zip(keys, combo))}
            try:
                name = test.name.format(**params)
            except (KeyError, IndexError, ValueError):
                name = test.name
            points.append(TestPoint(name, params, test.sample, test.timed, tuple(test.devices)))
    return points


def _semantic_issues(path: Path, spec: ProblemSpec, tests: list[TestPoint]) -> list[ProblemIssue]:
    """What the schema alone cannot say, in the order a fix would go: the signature, the test
    points, the rules, scoring and checker, then the folder's files."""
    return [*_signature_issues(spec), *_tests_issues(spec, tests), *_spec_issues(path, spec),
            *_file_issues(path, spec)]


def _issue(field_: str, message: str, fix: str = "") -> ProblemIssue:
    return ProblemIssue(PROBLEM_FILE, field_, message, fix)


def _signature_issues(spec: ProblemSpec) -> list[ProblemIssue]:
    names = [a.name for a in spec.signature]
    issues = [_issue("signature", f"argument {dup!r} appears twice",
                     "give every argument its own name")
              for dup in sorted({n for n in names if names.count(n) > 1})]
    if not any(a.role == "output" for a in spec.signature):
        issues.append(_issue("signature", "run_kernel has no output",
                             "add an argument with role: output"))
    return issues + _scale_issues(spec)


def _tests_issues(spec: ProblemSpec, tests: list[TestPoint]) -> list[ProblemIssue]:
    issues: list[ProblemIssue] = []
    seen: set[str] = set()
    for t in tests:
        if t.name in seen:
            issues.append(_issue("tests", f"test point name {t.name!r} appears twice",
                                 "use '{param}' placeholders in a matrix test's name"))
        seen.add(t.name)
        issues.extend(_test_point_issues(spec, t))
    if not any(t.sample for t in tests):
        issues.append(_issue("tests", "no sample test point",
                             "mark at least one test point `sample: true`"))
    if not spec.gpu_only and not any("cpu" in t.devices for t in tests):
        issues.append(_issue("tests", "no test point runs on the cpu device", "add a small test "
                             "point with `devices: [cpu]` so the folder validates anywhere"))
    return issues


def _spec_issues(path: Path, spec: ProblemSpec) -> list[ProblemIssue]:
    """The rules' languages, the score's expression, the checker."""
    issues = []
    for i, rule in enumerate(spec.rules):
        unknown = set(rule.languages) - set(spec.languages)
        if unknown:
            issues.append(_issue(f"rules[{i}].languages",
                                 f"{sorted(unknown)} not in the problem's languages"))
    try:
        bad = exprs.names(spec.scoring.score) - {"speedup"}
        if bad:
            issues.append(_issue("scoring.score", f"unknown names {sorted(bad)}",
                                 "use only `speedup`"))
    except exprs.ExpressionError as exc:
        issues.append(_issue("scoring.score", str(exc)))
    return issues + _checker_issues(path, spec.checker)


def _checker_issues(path: Path, checker: CheckerSpec) -> list[ProblemIssue]:
    """The checker exists (built in, or a .py file here) and takes the arguments given it."""
    params = checker_params(checker.name, path)
    if params is None:
        return [_issue("checker", f"{checker.name!r} is neither a built-in checker nor a "
                       "file in the folder", f"use one of {', '.join(BUILTIN_CHECKERS)} or the "
                       "name of a .py file here")]
    takes, any_keyword = params
    issues = []
    for name in checker.args:
        if name in TOLERANCE:
            issues.append(_issue(f"checker.args.{name}", "the tolerance's, not the checker's",
                                 f"set it under `tolerance: {{{name}: ...}}`"))
        elif name not in takes and not any_keyword:
            issues.append(_issue(f"checker.args.{name}", f"{checker.name} takes no argument "
                                 f"{name!r}", f"its arguments: {', '.join(sorted(takes))}"
                                 if takes else "remove it: it takes the tolerance only"))
    return issues


def _file_issues(path: Path, spec: ProblemSpec) -> list[ProblemIssue]:
    """The reference, the baseline, the statement and a template per language."""
    issues = [ProblemIssue(name, "", "file not found", f"create it or fix `{key}`")
              for key, name in (("reference", spec.reference), ("baseline", spec.baseline))
              if not (path / name).is_file()]
    if not (path / "statement.md").is_file():
        issues.append(ProblemIssue("statement.md", "", "file not found", "write the statement"))
    for lang in spec.languages:
        if not sorted((path / "templates").glob(f"{lang}.*")):
            issues.append(ProblemIssue(f"templates/{lang}.*", "", "no starter template",
                                       f"add templates/{lang}.<ext> or drop {lang}"))
    return issues


def _scale_issues(spec: ProblemSpec) -> list[ProblemIssue]:
    """A scale names another tensor of the same role, itself unscaled, scaling only this one."""
    issues = []
    args = {a.name: a for a in spec.signature}
    used: dict[str, str] = {}
    for arg in spec.signature:
        if not arg.scale:
            continue
        where = f"signature.{arg.name}.scale.by"
        by = args.get(arg.scale.by)
        if by is None or by.role != arg.role or by.name == arg.name:
            issues.append(ProblemIssue(PROBLEM_FILE, where, f"{arg.scale.by!r} is not another "
                                       f"{arg.role} tensor", f"name the {arg.role} holding "
                                       "the scales"))
        elif by.scale:
            issues.append(ProblemIssue(PROBLEM_FILE, where, f"{by.name} is scaled itself",
                                       "scales are plain tensors"))
        elif by.name in used:
            issues.append(ProblemIssue(PROBLEM_FILE, where, f"{by.name} already scales "
                                       f"{used[by.name]}", "give each scaled tensor its own"))
        used.setdefault(arg.scale.by, arg.name)
    return issues


def _scale_shape_issue(spec: ProblemSpec, arg: Arg, env: dict, test: str) -> ProblemIssue | None:
    """The scale tensor's shape must be the blocks' count along each dimension."""
    by = next((a for a in spec.signature if a.name == arg.scale.by), None)
    if by is None or by.role != arg.role or by is arg:
        return None  # reported by _scale_issues
    try:
        shape = [int(exprs.evaluate(s, env)) for s in arg.shape]
        scale_shape = [int(exprs.evaluate(s, env)) for s in by.shape]
    except exprs.ExpressionError:
        return None  # reported on its own
    shape[-1] *= DTYPES[arg.dtype].packs if arg.dtype in DTYPES else 1
    wanted = [-(-size // b) for size, b in zip(shape, arg.scale.block)]
    if scale_shape == wanted:
        return None
    return ProblemIssue(PROBLEM_FILE, f"signature.{by.name}.shape",
                        f"test point {test!r}: {scale_shape}, but blocks of {arg.scale.block} "
                        f"over {arg.name}'s {shape} values need {wanted}",
                        "make the scale's shape the number of blocks along each dimension")


def _test_point_issues(spec: ProblemSpec, test: TestPoint) -> list[ProblemIssue]:
    issues = []
    env = dict(test.params)
    for arg in spec.signature:
        if arg.scale and (bad := _scale_shape_issue(spec, arg, env, test.name)):
            issues.append(bad)
    for arg in spec.signature:
        exprs_ = arg.shape if arg.shape is not None else [
            arg.value if arg.value is not None else arg.name]
        for e in exprs_:
            try:
                exprs.evaluate(e, env)
            except exprs.ExpressionError as exc:
                issues.append(ProblemIssue(PROBLEM_FILE, f"signature.{arg.name}",
                                           f"test point {test.name!r}: {exc}",
                                           "add the parameter to the test point's params"))
    for key in ("bytes", "flops"):
        expr = getattr(spec.metrics, key)
        if expr is not None:
            try:
                exprs.evaluate(expr, env)
            except exprs.ExpressionError as exc:
                issues.append(ProblemIssue(PROBLEM_FILE, f"metrics.{key}",
                                           f"test point {test.name!r}: {exc}"))
    return issues


def folder_hash(path: Path) -> str:
    """Content hash of the problem folder: the problem's version."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(file.relative_to(path)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def problem_folders(root: Path) -> list[Path]:
    """The problem folders directly under `root` (each holds a problem.yaml), by name."""
    return sorted(p for p in root.iterdir() if (p / "problem.yaml").is_file()) \
        if root.is_dir() else []


def load_problem(path: str | Path) -> Problem:
    """Load and statically validate a problem folder; raise ProblemError listing every issue."""
    path = Path(path).resolve()
    file = path / PROBLEM_FILE
    if not file.is_file():
        raise ProblemError(path, [ProblemIssue(PROBLEM_FILE, "", f"not found in {path}",
                                               "run `kjudge problem new SLUG` for a template")])
    try:
        raw = yaml.safe_load(file.read_text())
    except yaml.YAMLError as exc:
        raise ProblemError(path, [ProblemIssue(PROBLEM_FILE, "", f"not valid YAML: {exc}")]) from None
    if not isinstance(raw, dict):
        raise ProblemError(path, [ProblemIssue(PROBLEM_FILE, "", "must be a mapping of keys")])
    try:
        spec = ProblemSpec.model_validate(raw)
    except ValidationError as exc:
        issues = [
            ProblemIssue(PROBLEM_FILE, _field_path(err["loc"]), err["msg"], _fix_for(err))
            for err in exc.errors()
        ]
        raise ProblemError(path, issues) from None
    tests = expand_tests(spec)
    issues = _semantic_issues(path, spec, tests)
    issues += _solution_folder_issues(path) + todo_issues(path)
    if issues:
        raise ProblemError(path, issues)
    return Problem(path, spec, tuple(tests), folder_hash(path))


def todo_issues(path: Path) -> list[ProblemIssue]:
    """Every `KJUDGE-TODO` left in the folder's text files (an importer writes them where a
    format says too little): the folder is refused until each is done and deleted."""
    issues = []
    for file in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        try:
            lines = file.read_text().splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(lines, 1):
            if TODO_MARKER in line:
                what = line.split(TODO_MARKER, 1)[1].lstrip(" :")
                issues.append(ProblemIssue(str(file.relative_to(path)), f"line {number}",
                                           f"{TODO_MARKER}: {what}",
                                           "do what it says, then delete the marker"))
    return issues


def _solution_folder_issues(path: Path) -> list[ProblemIssue]:
    solutions = path / "solutions"
    if not solutions.is_dir():
        return [ProblemIssue("solutions/", "", "no self-test submissions",
                             "add solutions/AC/<file> with an accepted submission")]
    issues = []
    for sub in sorted(p for p in solutions.iterdir() if p.is_dir()):
        if sub.name not in Verdict.__members__:
            issues.append(ProblemIssue(f"solutions/{sub.name}", "", "not a verdict name",
                                       f"use one of {', '.join(Verdict.__members__)}"))
    if not any((solutions / "AC").glob("*")):
        issues.append(ProblemIssue("solutions/AC/", "", "no accepted self-test submission",
                                   "add at least one submission that must be AC"))
    return issues


def self_tests(problem: Problem) -> list[tuple[Verdict, Path]]:
    solutions = problem.path / "solutions"
    return [
        (Verdict[sub.name], file)
        for sub in sorted(p for p in solutions.iterdir() if p.is_dir())
        for file in sorted(sub.iterdir())
        if file.is_file() and not file.name.startswith(".")
    ]
