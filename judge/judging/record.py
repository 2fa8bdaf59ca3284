"""The judging record: per test point SPJ reports and the overall result (shared by CLI and server)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from judge.verdicts import Verdict


def json_safe(value):
    """Standard JSON has no NaN or Infinity: write them as the strings JavaScript prints."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


@dataclass
class TestReport:
    name: str
    sample: bool
    verdict: Verdict | None  # None: not run (an earlier test point ended the judging)
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
    rel_spread: float | None = None  # IQR / median of the submission's samples
    rse: float | None = None
    baseline_rse: float | None = None
    samples: int | None = None
    floor_ms: float | None = None  # an empty run_kernel, timed like the submission's calls
    gbps: float | None = None
    tflops: float | None = None
    peak_bandwidth_fraction: float | None = None
    peak_flops_fraction: float | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["verdict"] = self.verdict.value if self.verdict else None
        return json_safe(data)


@dataclass
class JudgeResult:
    problem: str
    problem_version: str
    language: str
    verdict: Verdict
    score: float = 0.0
    speedup: float | None = None
    time_ms: float | None = None  # sum of the submission's medians over timed test points
    baseline_ms: float | None = None
    peak_memory_mb: float | None = None
    compile_log: str = ""
    message: str = ""
    tests: list[TestReport] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # judgings an organizer should look at
    requested: dict = field(default_factory=dict)  # what was asked for: language, device, sandbox
    applied: dict = field(default_factory=dict)  # what actually ran: device, sandbox, versions
    wall_s: float = 0.0
    kernel_s: float = 0.0  # time spent inside run_kernel and the baseline, all calls
    # where the wall time went, in seconds: compile, sandbox_start, reference, correctness,
    # timing (the judging); queue_wait and store (added by the service)
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def overhead_s(self) -> float:
        """The judge's own share of the wall time: all but the calls of the two kernels."""
        return max(self.wall_s - self.kernel_s, 0.0)

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.AC

    def to_dict(self) -> dict:
        data = asdict(self)
        data["verdict"] = self.verdict.value
        data["tests"] = [t.to_dict() for t in self.tests]
        return json_safe(data)
