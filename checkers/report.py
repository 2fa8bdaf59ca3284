"""The structured result of checking one output against the reference."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Mismatch:
    index: list[int]
    got: float
    expected: float


@dataclass
class CheckReport:
    passed: bool
    matched_ratio: float = 0.0
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    mismatches: int = 0
    total: int = 0
    nan_count: int = 0
    inf_count: int = 0
    worst: list[Mismatch] = field(default_factory=list)
    message: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def merge(reports: dict[str, CheckReport], threshold: float) -> CheckReport:
    """Several outputs checked as one test point: counts add up, errors take the maximum."""
    if len(reports) == 1:
        return next(iter(reports.values()))
    total = sum(r.total for r in reports.values())
    matched = sum(r.total - r.mismatches for r in reports.values())
    failed = [f"{name}: {r.message}" for name, r in reports.items() if not r.passed]
    ratio = matched / total if total else 1.0
    return CheckReport(
        passed=not failed and ratio >= threshold,
        matched_ratio=ratio,
        max_abs_err=max(r.max_abs_err for r in reports.values()),
        max_rel_err=max(r.max_rel_err for r in reports.values()),
        mismatches=total - matched,
        total=total,
        nan_count=sum(r.nan_count for r in reports.values()),
        inf_count=sum(r.inf_count for r in reports.values()),
        worst=[w for r in reports.values() for w in r.worst][:5],
        message="; ".join(failed),
    )
