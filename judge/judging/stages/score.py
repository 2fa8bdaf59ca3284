"""Score: what each timed point is charged (no time under physics, a report short of the judge's
clock flagged or held), its throughput, and the judging's speedup and score over the points
(judge/measure/scoring.py holds the arithmetic). Trusted code."""

from __future__ import annotations

import math

from judge.judging.context import Judging
from judge.judging.record import TestReport
from judge.measure import charging, scoring
from judge.problem import exprs
from judge.problem.schema import TestPoint
from judge.verdicts import Verdict

IMPLAUSIBLE_SPEEDUP = 10.0
# The judge's clock charges any significant excess; above this fraction of the reported time it
# is also flagged for organizers (an honest call that blocks, e.g. sleeps, leaves the process cold
# for its reply: a few percent of excess, charged but not worth a look).
FLAGGED_EXCESS = 0.1
# A flagged excess that is also this fraction of the time charged, beyond the baseline's own
# gap between clock and report, holds the result for review (item 3 of issue 28): an honest
# PyTorch `c.copy_(a + b)` showed 8 % (work of its harness's call path that its report leaves
# out and the baseline's does not), flagged in two judgings of three at 100k elements; forged
# timers show 40-100 %. A report under REPORT_FLOOR_FRACTION of the empty call's is held whatever
# its size: an honest loop.cpp at a 7-element point reports 0.92-0.99 of the empty call (measured
# in the baseline's process), and under a loaded CI run under 0.9 (its result was held); forged
# timers report a hundredth of it. (Whatever is held, the clock scores.)
HELD_EXCESS = 0.25
REPORT_FLOOR_FRACTION = 0.5
# A submission whose batches report one heavy call and near-empty ones (charging.lopsided) in at
# least this fraction of its turns computed calls ahead of their turn: held for review.
HELD_LOPSIDED = 0.5
CLOCK_HOLD = "clock"  # a hold's `by` for a report short of the judge's clock (timed.py confirms it)


def roofline_ms(j: Judging, test: TestPoint) -> float | None:
    """The least time the problem's declared bytes and flops take at the device's peaks
    (None where neither is known)."""
    metrics, least = j.spec.metrics, []
    if metrics.bytes is not None and j.device.peak_gbps:
        least.append(float(exprs.evaluate(metrics.bytes, test.params))
                     / (j.device.peak_gbps * 1e9))
    peak = j.device.peak_tflops_for(metrics.precision) if metrics.flops else None
    if peak:
        least.append(float(exprs.evaluate(metrics.flops, test.params)) / (peak * 1e12))
    return 1000 * max(least) if least else None


def least(j: Judging, report: TestReport, test: TestPoint) -> tuple[str | None, float]:
    """The physical bound of a call's time at this point, and its name: the empty call's
    floor (measured beside it) or the roofline, the higher."""
    bounds = {"the empty call's floor": report.floor_ms, "the roofline": roofline_ms(j, test)}
    return max(((k, v) for k, v in bounds.items() if v), key=lambda kv: kv[1],
               default=(None, 0.0))


def physical(j: Judging, report: TestReport, test: TestPoint, ms: float) -> tuple[float, float]:
    """No point below physics: a time under the bound (`least`) is charged at it, and held
    for review when clearly under the roofline. Under the empty call's floor it is only
    charged: the judge's clock is no forgery, and at a tiny point, where an honest call costs
    about the empty call, its noise put an honest loop.cpp 12 % under the floor in one
    judging of four (the report under the floor is what holds: `charge_point`). Returns
    the time charged and the bound."""
    name, bound = least(j, report, test)
    if ms >= bound:
        return ms, bound
    if not name.endswith("floor") and ms < (1 - charging.PHYSICS_MARGIN) * bound:
        j.result.hold("roofline", test.name,
                      f"{ms:.4f} ms per call is under {name} ({bound:.4f} ms): charged at it")
    return bound, bound


def charge_point(j: Judging, report: TestReport, test: TestPoint, charge: charging.Charge,
                 sub: scoring.Stats, base: scoring.Stats) -> None:
    """A timed point's record: the time charged, the speedup, what the clock saw beyond the
    report, the spread and the throughput."""
    ms, bound = physical(j, report, test, charge.ms)
    # the baseline's time is held to the same bound: where both calls cost about the
    # empty call (tiny points), the clock's noise put the submission's under it and not the
    # baseline's as often as not, and its speedup fell to 0.3-0.8 for the baseline's own code
    report.time_ms, report.baseline_ms = ms, max(base.median, bound)
    report.speedup = scoring.speedup(report.baseline_ms, ms)
    _judge_the_report(j, report, test, charge, ms)
    report.rel_spread, report.rse, report.baseline_rse = sub.iqr_rel, sub.rse, base.rse
    report.reported_ms = charge.reported_ms
    report.clock_excess_ms = charge.time_excess_ms
    report.prepare_excess_ms = charge.prepare_excess_ms if j.device.kind != "cpu" else None
    report.samples = sub.n
    report.harness_ms, report.resolvable = charge.harness_ms, charge.resolvable
    report.resolvable_from_ms = charge.resolvable_from_ms
    if charge.lopsided >= HELD_LOPSIDED:
        j.result.hold("batch", test.name,
                      f"{charge.lopsided:.0%} of the timed batches reported one heavy call and "
                      "near-empty ones: calls computed ahead of their turn")
    _throughput(j, report, test, ms / 1000)
    if report.speedup > IMPLAUSIBLE_SPEEDUP:
        j.result.flags.append(f"{test.name}: speedup {report.speedup:.1f}x is "
                              f"implausibly high; check by hand")


def _judge_the_report(j: Judging, report: TestReport, test: TestPoint,
                      charge: charging.Charge, ms: float) -> None:
    """A report short of the clock (a forged timer): by a significant excess, or below what an
    empty call reports (which no call can be: the clock's noise cannot hide that one); judged
    against what is charged (`ms`: the floor where the clock, less the harness's work around
    each call, left a tiny call less than it; a report under that floor is short)."""
    under_floor = bool(report.floor_ms) and (
        charge.reported_ms < REPORT_FLOOR_FRACTION * report.floor_ms)
    if not ((charge.forged or under_floor) and ms > (1 + FLAGGED_EXCESS) * charge.reported_ms):
        return
    what = (f"charged {ms - charge.reported_ms:.4f} ms per call more than the "
            f"{charge.reported_ms:.4f} ms reported (the judge's clock or the run's CPU "
            "time saw it outside the measured call, or it is under the empty call's)")
    beyond_baseline = charge.time_excess_ms + charge.ms - charge.clock_ms
    if under_floor or beyond_baseline > HELD_EXCESS * charge.ms:
        j.result.hold(CLOCK_HOLD, test.name, what)
    else:
        j.result.flags.append(f"{test.name}: {what}")


def _throughput(j: Judging, report: TestReport, test: TestPoint, seconds: float) -> None:
    """GB/s and TFLOP/s from the problem's declared bytes and flops, and their share of peak."""
    metrics = j.spec.metrics
    if metrics.bytes is not None and seconds > 0:
        report.gbps = float(exprs.evaluate(metrics.bytes, test.params)) / seconds / 1e9
        if j.device.peak_gbps:
            report.peak_bandwidth_fraction = report.gbps / j.device.peak_gbps
    if metrics.flops is not None and seconds > 0:
        report.tflops = float(exprs.evaluate(metrics.flops, test.params)) / seconds / 1e12
        peak = j.device.peak_tflops_for(metrics.precision)
        if peak:
            report.peak_flops_fraction = report.tflops / peak


def _counted_points(j: Judging, timed: list[TestReport]
                    ) -> tuple[list[TestReport], list[float], list[float]]:
    """The points the score counts, and their times: the resolvable ones (charging.Floor); where
    none is, every point at the baseline's time. A speedup there is the harness's as much as the
    kernel's, either way: a trimmed harness would lift a slow kernel toward any cap, so no
    point says anything (the submission ranks as the baseline, flagged)."""
    resolved = [t for t in timed if t.resolvable is not False]
    if resolved:
        if len(resolved) < len(timed):
            j.result.applied["unresolvable_points"] = [t.name for t in timed
                                                       if t.resolvable is False]
        return resolved, [t.time_ms for t in resolved], [t.baseline_ms for t in resolved]
    j.result.applied["unresolvable_points"] = [t.name for t in timed]
    j.result.flags.append("no timed point's calls are long enough for the judge to resolve "
                          "them beyond its harness: every point counted at the baseline's time")
    for t in timed:
        t.counted_speedup = 1.0 if t.speedup is not None else None
    return timed, [t.baseline_ms for t in timed], [t.baseline_ms for t in timed]


def score(j: Judging) -> None:
    """The judging's times, speedup and score over its timed points."""
    timed = [t for t in j.result.tests if t.time_ms is not None]
    if not timed:
        return
    subs, bases = [t.time_ms for t in timed], [t.baseline_ms for t in timed]
    j.result.time_ms, j.result.baseline_ms = sum(subs), sum(bases)
    if j.result.verdict is not Verdict.AC:
        return
    timed, subs, bases = _counted_points(j, timed)
    # each point's target, not the spread it showed: a run that made one point's times
    # noisy on purpose would otherwise widen the allowance of another's
    errors = [t.target_rse for t in timed]
    counted, lowered = scoring.counted_times(bases, subs, errors)
    if lowered is not None:
        timed[lowered].counted_speedup = scoring.speedup(bases[lowered], counted[lowered])
    speedup = scoring.aggregate(j.spec.scoring.aggregate, bases, subs, errors)
    j.result.speedup = speedup
    j.result.score = scoring.score(j.spec.scoring.score, speedup) if math.isfinite(
        speedup) else 0.0
