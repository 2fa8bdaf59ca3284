"""Timing one test point: the submission and the baseline alternate, and the time that scores.

Trusted side. Each round, in a random order, each contender gets a `prepare` request (poison its
outputs, flush the cache) and a `time` request (one call, whose duration the harness reports).
The judge's own clock times both requests from outside the sandbox. The harness's report is
precise but lives in the contestant's process, so it can be forged; the judge's clock cannot, but
carries the protocol's overhead, which the baseline's harness (the same code, no contestant code)
measures. The time charged is the reported one unless the judge's clock shows significantly more
— in the `time` request beyond the baseline's overhead, or in `prepare` beyond the baseline's
`prepare` — and then that excess is charged in full: work moved out of the measured call, or a
report lowered by patching the harness, costs what the judge saw.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from judge import scoring
from judge.problem import Timing

# An excess counts when it is this many standard errors above zero: below it, the judge's clock
# cannot tell a forged report from its own noise (tens of microseconds per request on a busy VM).
SIGNIFICANCE = 3.0


@dataclass
class Samples:
    """One contender's measurements at one test point, in milliseconds."""

    reported: list[float] = field(default_factory=list)  # by the harness, around the call
    time_rt: list[float] = field(default_factory=list)  # by the judge, around `time`
    prepare_rt: list[float] = field(default_factory=list)  # by the judge, around `prepare`

    @property
    def overhead(self) -> list[float]:
        """What the judge saw of each `time` request beyond the reported call."""
        return [rt - ms for rt, ms in zip(self.time_rt, self.reported)]


@dataclass(frozen=True)
class Charge:
    """The time that scores for the submission, and what the judge's clock added to it."""

    reported_ms: float  # median of the harness's reports
    time_excess_ms: float  # judge's clock beyond the report and the baseline's overhead
    prepare_excess_ms: float  # `prepare` beyond the baseline's
    charged_time: bool  # whether each excess was significant, hence charged
    charged_prepare: bool

    @property
    def ms(self) -> float:
        return (self.reported_ms + (self.time_excess_ms if self.charged_time else 0.0)
                + (self.prepare_excess_ms if self.charged_prepare else 0.0))


def _median_se(values: list[float]) -> float:
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return scoring.MEDIAN_SE_FACTOR * mad / math.sqrt(len(values))


def _excess(values: list[float], reference: list[float]) -> tuple[float, bool]:
    """median(values) - median(reference), and whether it is significantly above zero."""
    excess = statistics.median(values) - statistics.median(reference)
    noise = math.hypot(_median_se(values), _median_se(reference))
    return excess, excess > SIGNIFICANCE * noise


def charge(sub: Samples, base: Samples) -> Charge:
    reported = statistics.median(sub.reported)
    # what the judge's clock saw of `time` beyond the report, against the baseline's (the same
    # harness code): a forged report, or work after the clock stopped, shows as more
    time_excess, time_significant = _excess(sub.overhead, base.overhead)
    prepare_excess, prepare_significant = _excess(sub.prepare_rt, base.prepare_rt)
    return Charge(reported, time_excess, prepare_excess, time_significant and time_excess > 0,
                  prepare_significant and prepare_excess > 0)


Request = Callable[[str, dict], dict]  # (role, message) -> reply; failures raise


def interleave(request: Request, timing: Timing) -> dict[str, Samples]:
    """Alternate `prepare` + `time` between the two contenders in a random order each round,
    until both reports' relative standard errors reach the target (or a cap is hit)."""
    samples = {"submission": Samples(), "baseline": Samples()}
    roles = list(samples)
    started = time.monotonic()
    while True:
        random.shuffle(roles)
        for role in roles:
            got = samples[role]
            sent = time.perf_counter()
            request(role, {"op": "prepare"})
            prepared = time.perf_counter()
            reply = request(role, {"op": "time"})
            done = time.perf_counter()
            got.prepare_rt.append((prepared - sent) * 1000)
            got.time_rt.append((done - prepared) * 1000)
            got.reported.append(reply["ms"])
        n = len(samples["submission"].reported)
        if n >= timing.max_reps or (n >= 3 and time.monotonic() - started > timing.max_s):
            return samples
        if all(scoring.converged(s.reported, timing.target_rse, timing.min_reps)
               for s in samples.values()):
            return samples
