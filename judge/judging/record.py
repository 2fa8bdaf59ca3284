"""The judging record: one schema end to end. The pipeline fills a `JudgeResult`; the service
stores `to_dict()` as the judging's record (judge/service/models.py: the only mapping to the
table); the API, the web page and `kjudge status` read it back with `from_dict`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from judge.verdicts import Verdict

NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def json_safe(value):
    """Standard JSON has no NaN or Infinity: write them as the strings JavaScript prints."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def _known_fields(cls, data: dict[str, Any]) -> dict[str, Any]:
    """The keys of `data` that are fields of `cls` (a view adds its own; older records lack
    some), float fields written by `json_safe` turned back into floats."""
    out = {}
    for f in fields(cls):
        if f.name in data:
            value = data[f.name]
            if "float" in str(f.type) and isinstance(value, str):
                value = NON_FINITE.get(value, value)
            out[f.name] = value
    return out


def _verdict(value: str | Verdict | None) -> Verdict | None:
    return Verdict(value) if value else None


@dataclass
class TestReport:
    name: str
    sample: bool = False
    verdict: Verdict | None = None  # None: not run (an earlier test point ended the judging)
    message: str = ""
    matched_ratio: float | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatches: int | None = None
    total: int | None = None
    nan_count: int | None = None
    inf_count: int | None = None
    worst: list[dict] = field(default_factory=list)
    params: dict = field(default_factory=dict)
    # timing, for timed points of an accepted submission
    time_ms: float | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    # where lower than `speedup`: what the aggregate counts it as (the next best point's: no
    # single point carries the aggregate, judge/measure/scoring.py counted_times)
    counted_speedup: float | None = None
    rel_spread: float | None = None  # IQR / median of the submission's samples
    rse: float | None = None
    baseline_rse: float | None = None
    # of the paired ratio of the two contenders' times (the speedup), and what it had to reach:
    # the problem's target, looser where the point weighs little in the score (point_target)
    speedup_rse: float | None = None
    target_rse: float | None = None
    time_cap_s: float | None = None  # the point's own (scoring.point_time_cap)
    samples: int | None = None  # timed batches (turns) of the submission
    batch_calls: float | None = None  # calls per batch (median): each on its own fresh inputs
    reported_ms: float | None = None  # what the submission's harness reported (not what scores)
    floor_ms: float | None = None  # an empty run_kernel, timed like the submission's calls
    # what the judge's clock saw per call beyond the report, against the baseline's (the timed
    # request), and beyond the baseline's copies (the request readying it): honest noise, or a
    # report that was short and work hidden from it
    clock_excess_ms: float | None = None
    prepare_excess_ms: float | None = None
    # the harness's own work per call (the baseline's harness, the submission's loader), and
    # whether it fits in the judge's resolution of the submission's call: a point that is not
    # resolvable is shown and not counted in the score (stages/score.py), and a call of
    # `resolvable_from_ms` would be
    harness_ms: float | None = None
    resolvable: bool | None = None
    resolvable_from_ms: float | None = None
    baseline_resolvable_from_ms: float | None = None  # the same for the baseline's calls
    gbps: float | None = None
    tflops: float | None = None
    peak_bandwidth_fraction: float | None = None
    peak_flops_fraction: float | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["verdict"] = self.verdict.value if self.verdict else None
        return json_safe(data)

    @classmethod
    def from_dict(cls, data: dict) -> TestReport:
        known = _known_fields(cls, data)
        known["verdict"] = _verdict(known.get("verdict"))
        return cls(**known)


@dataclass
class JudgeResult:
    problem: str = ""
    problem_version: str = ""
    language: str = ""
    verdict: Verdict = Verdict.SE
    score: float = 0.0
    speedup: float | None = None
    time_ms: float | None = None  # sum of the submission's medians over timed test points
    baseline_ms: float | None = None
    # what the submission used: on a GPU its device memory's peak; on the CPU the growth of its
    # process over the idle harness (interpreter and torch, ~1 GB, are not the submission's)
    memory_mb: float | None = None
    memory_measure: str = ""  # says which of the two `memory_mb` is
    compile_log: str = ""
    message: str = ""
    tests: list[TestReport] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # judgings an organizer should look at
    # the flags that hold the result off the boards until an organizer clears it (a charged
    # forgery, a time under physics, a hard-tier KernelGuard hit): {by, what, test, line}
    holds: list[dict] = field(default_factory=list)
    # KernelGuard's opinion of a Python source (judge/judging/guard.py): its hits, and whether
    # a hard-tier one puts the judging on the organizers' review list
    guard: dict = field(default_factory=dict)
    requested: dict = field(default_factory=dict)  # what was asked for: language, device, sandbox
    applied: dict = field(default_factory=dict)  # what actually ran: device, sandbox, versions
    wall_s: float = 0.0
    kernel_s: float = 0.0  # time spent inside run_kernel and the baseline, all calls
    # where the wall time went, in seconds: compile, sandbox_start, reference, correctness,
    # timing (the judging); queue_wait and store (added by the service)
    phases: dict[str, float] = field(default_factory=dict)
    # a profile submission's Nsight Compute summary (judge/judging/profiling.py): the point,
    # the kernels' metrics, the report file's name and size
    profile: dict = field(default_factory=dict)

    @property
    def overhead_s(self) -> float:
        """The judge's own share of the wall time: all but the calls of the two kernels."""
        return max(self.wall_s - self.kernel_s, 0.0)

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.AC

    @property
    def needs_review(self) -> bool:
        return bool(self.holds) or bool(self.guard.get("review"))  # the latter: older records

    def hold(self, by: str, test: str, what: str) -> None:
        """A flag that holds the result off the boards until an organizer clears it."""
        self.flags.append(f"{test}: {what}")
        self.holds.append({"by": by, "what": what, "test": test, "line": None})

    def to_dict(self) -> dict:
        """The record as JSON-ready data, `overhead_s` included (derived: from_dict drops it)."""
        data = asdict(self)
        data["verdict"] = self.verdict.value
        data["tests"] = [t.to_dict() for t in self.tests]
        data["overhead_s"] = self.overhead_s
        return json_safe(data)

    @classmethod
    def from_dict(cls, data: dict) -> JudgeResult:
        known = _known_fields(cls, data)
        known["verdict"] = _verdict(known.get("verdict")) or Verdict.SE
        known["tests"] = [TestReport.from_dict(t) for t in known.get("tests") or []]
        return cls(**known)
