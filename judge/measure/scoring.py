"""Timing statistics, the stop rule, speedups, aggregation and the score (SPEC §5)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from judge.problem import exprs

# The median's standard error over the standard deviation's for normal data (its efficiency
# loss), and the standard error of the median from the median absolute deviation (1.4826 turns
# the MAD into a standard deviation for normal data).
MEDIAN_EFFICIENCY_LOSS = math.sqrt(math.pi / 2)  # 1.2533
MEDIAN_SE_FACTOR = 1.4826 * MEDIAN_EFFICIENCY_LOSS


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


# The stop rule looks at no fewer samples than this, whatever the problem's min_reps
MIN_STOP_SAMPLES = 5


def relative_se(samples: Sequence[float]) -> float:
    """The relative standard error of the median of `samples` (inf where it is not positive),
    from the mean absolute deviation about the median (sqrt(pi/2) times it estimates a normal's
    standard deviation): the median absolute deviation of a handful of samples is near zero
    whenever two of three agree, and a point whose rounds varied by 5 % stopped at its third pair
    in a judging of four, more than 2 % off in one of four (tests/test_scoring.py simulates it)."""
    median = statistics.median(samples)
    if median <= 0:
        return math.inf
    spread = math.sqrt(math.pi / 2) * statistics.fmean(abs(x - median) for x in samples)
    return MEDIAN_EFFICIENCY_LOSS * spread / math.sqrt(len(samples)) / median


def converged(samples: Sequence[float], target_rse: float, min_reps: int) -> bool:
    """Whether the median of `samples` is known to `target_rse` (checked after every round)."""
    return len(samples) >= max(min_reps, MIN_STOP_SAMPLES) and relative_se(samples) <= target_rse


# A point that weighs little in the score is timed to less precision (point_target), at most this
# many times the problem's target: its own time stays a measurement worth showing.
MAX_POINT_RELAXATION = 10.0


def point_share(aggregate: str, points: int, point_ms: dict[str, float],
                earlier_ms: dict[str, float]) -> float:
    """What a timed point weighs in the aggregate, at most: with `geomean` 1/points; with
    `total_time` its time over its own and the points timed before it (`earlier_ms`), for the
    contender it weighs more for (the points timed after it only lower that share, so that the
    order of the points decides how soon a judging ends, never how precise its score is)."""
    if aggregate == "geomean":
        return 1 / max(points, 1)
    shares = [ms / (ms + earlier_ms.get(role, 0.0)) for role, ms in point_ms.items() if ms > 0]
    return max(shares, default=1.0)


def point_target(target_rse: float, share: float) -> float:
    """The relative standard error a point's paired ratio needs for the score to have
    `target_rse`, the point weighing `share` of it: the points' errors are independent and add in
    quadrature, and with target / sqrt(w_i) each, sqrt(sum (w_i e_i)^2) = target sqrt(sum w_i),
    the target itself. A point that weighs 1 % of a total time needs 10 %, not 1 %: the rounds
    spent on it moved the score by a hundredth of their worth."""
    return target_rse / math.sqrt(min(1.0, max(share, MAX_POINT_RELAXATION ** -2)))


def point_weight(aggregate: str, point_ms: dict[str, float],
                 heaviest_ms: dict[str, float]) -> float:
    """What a point weighs against the heaviest point (timed first; `heaviest_ms`, each
    contender's time per call there): with `total_time` its time per call over that one's, for
    the contender it weighs more for (the baseline's bounds it from below: a run cannot make a
    point look light), at most 1; with `geomean` the points weigh alike. (Not the ratio of the
    two points' shares so far: the first one's, alone, is 1, and three points of equal time came
    out at 1, 1/2 and 1/3.)"""
    if aggregate == "geomean":
        return 1.0
    ratios = [ms / heaviest_ms[role] for role, ms in point_ms.items()
              if ms > 0 and heaviest_ms.get(role, 0) > 0]
    return min(1.0, max(ratios, default=1.0))


def point_time_cap(max_s: float, weight: float) -> float:
    """A point's time cap: the problem's `max_s` in proportion to what it weighs against the
    heaviest point (`point_weight`): rounds go as 1 / target^2, so as the weight. Where the host
    lets every point reach its target the cap is not met; where it is too noisy for that, a point
    of a total time a tenth of the heaviest's gets a tenth of the time: timed to the problem's
    cap alike, it took as long as the heaviest (vector_add's n100003: 3 s for 10 % of the score)
    and moved the score's error by a tenth of what that time was worth."""
    return max_s * min(1.0, weight)


def speedup(baseline_ms: float, submission_ms: float) -> float:
    return baseline_ms / submission_ms if submission_ms > 0 else math.inf


def counted_times(baseline_ms: Sequence[float], submission_ms: Sequence[float],
                  rse: Sequence[float | None] | None = None) -> tuple[list[float], int | None]:
    """No single point carries the aggregate: the point with the highest speedup counts at the
    next highest's (its time raised to match), so that a trick that works on one point only
    (the "aggregate underflow" of public boards: one tiny point at a forged 1000x) moves the
    score no further than the other points go. With `rse` (the relative standard error each
    point's speedup was timed to) it counts at up to two standard errors of the two points'
    difference above that: a point timed to a loose target (point_target) is noisy, and an honest
    best point counted at a noisy second's made the score as noisy. With two points the slower
    one decides.
    Returns the times to aggregate and the index of the point lowered (None: none was)."""
    counted = list(submission_ms)
    if len(counted) < 2 or any(t <= 0 for t in counted):
        return counted, None
    speedups = [speedup(b, t) for b, t in zip(baseline_ms, counted)]
    order = sorted(range(len(speedups)), key=speedups.__getitem__, reverse=True)
    top, second = order[0], order[1]
    errors = [0.0, 0.0] if rse is None else [rse[top] or 0.0, rse[second] or 0.0]
    most = speedups[second] * (1 + 2 * math.hypot(*errors))
    if speedups[top] <= most:
        return counted, None
    counted[top] = baseline_ms[top] / most
    return counted, top


def aggregate(method: str, baseline_ms: Sequence[float], submission_ms: Sequence[float],
              rse: Sequence[float | None] | None = None) -> float:
    """total_time: sum of baseline medians / sum of submission medians; geomean of speedups;
    both over the counted times (`counted_times`, `rse` its points' errors)."""
    if not submission_ms:
        return 0.0
    counted, _ = counted_times(baseline_ms, submission_ms, rse)
    if method == "total_time":
        return speedup(sum(baseline_ms), sum(counted))
    logs = [math.log(speedup(b, s)) for b, s in zip(baseline_ms, counted)]
    return math.exp(statistics.fmean(logs))


def score(expression: str, problem_speedup: float) -> float:
    return float(exprs.evaluate(expression, {"speedup": problem_speedup}))
