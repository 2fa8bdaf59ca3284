"""Timing statistics, the stop rule, speedups, aggregation and the score (SPEC §5)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from judge.problem import exprs

# Standard error of the median from the median absolute deviation: 1.4826 turns the MAD into a
# standard deviation for normal data, sqrt(pi/2) = 1.2533 is the median's efficiency loss.
MEDIAN_SE_FACTOR = 1.4826 * 1.2533


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    mean: float
    rse: float  # relative standard error of the median (robust: one preempted call barely moves it)
    iqr_rel: float  # (p75 - p25) / median
    min: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stats:
        n = len(samples)
        median = statistics.median(samples)
        mad = statistics.median(abs(x - median) for x in samples)
        q = statistics.quantiles(samples, n=4, method="inclusive") if n > 1 else [samples[0]] * 3
        return cls(
            n=n,
            median=median,
            mean=statistics.fmean(samples),
            rse=MEDIAN_SE_FACTOR * mad / math.sqrt(n) / median if median > 0 else 0.0,
            iqr_rel=(q[2] - q[0]) / median if median > 0 else 0.0,
            min=min(samples),
        )


def converged(samples: Sequence[float], target_rse: float, min_reps: int) -> bool:
    return len(samples) >= min_reps and Stats.of(samples).rse <= target_rse


def speedup(baseline_ms: float, submission_ms: float) -> float:
    return baseline_ms / submission_ms if submission_ms > 0 else math.inf


def aggregate(method: str, baseline_ms: Sequence[float], submission_ms: Sequence[float]) -> float:
    """total_time: sum of baseline medians / sum of submission medians; geomean of speedups."""
    if not submission_ms:
        return 0.0
    if method == "total_time":
        return speedup(sum(baseline_ms), sum(submission_ms))
    logs = [math.log(speedup(b, s)) for b, s in zip(baseline_ms, submission_ms)]
    return math.exp(statistics.fmean(logs))


def score(expression: str, problem_speedup: float) -> float:
    return float(exprs.evaluate(expression, {"speedup": problem_speedup}))
