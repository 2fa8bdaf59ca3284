"""Timing one test point: the submission and the baseline alternate, and the time that scores.

Trusted side. Each round, in a random order, each contender gets a `prepare` request (poison its
outputs, flush the cache) and a `time` request (one call, whose duration the harness reports).
The judge's own clock times both requests from outside the sandbox. The harness's report is
precise but lives in the contestant's process, so it can be forged; the judge's clock cannot, but
carries the protocol's overhead, which the baseline's harness (the same code, no contestant code)
measures. The time charged is the reported one unless the judge's clock shows significantly more
— in the `time` request beyond the baseline's overhead, or in `prepare` beyond the baseline's
`prepare` — and then that excess is charged in full: work moved out of the measured call, or a
report lowered by patching the harness, costs what the judge saw. Below an allowance (see
ALLOWANCE_MS) the judge's clock cannot tell a forgery from two processes' honest differences.

Between its turns a contender is frozen whole (its cgroup's freezer): a thread the submission
left running can neither slow the baseline down nor finish its work unseen; it runs only inside
the submission's own requests, which the judge's clock times.
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

# An excess is charged when it is this many standard errors above zero (the two contenders'
# samples paired round by round) and above an allowance: two honest harness processes differ
# systematically by up to a few tens of microseconds per request on a busy 2-core VM (measured:
# paired z-scores up to 12 for an honest C++ kernel, excesses up to ~0.05 ms, mostly in the
# prepare request's 8 MiB flush), which the judge cannot tell from a forgery of that size.
SIGNIFICANCE = 3.0
ALLOWANCE_MS = 0.05
ALLOWANCE_FRACTION = 0.05  # of the reported time


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


def _excess(values: list[float], reference: list[float]) -> tuple[float, float]:
    """How much `values` exceed `reference`, round by round (the two contenders' samples of one
    round are paired, so that a drift of the host's speed during the run cancels out): the
    median of the differences, in standard errors."""
    differences = [v - r for v, r in zip(values, reference)]
    excess = statistics.median(differences)
    noise = _median_se(differences)
    return excess, excess / noise if noise > 0 else (math.inf if excess > 0 else 0.0)


def charge(sub: Samples, base: Samples) -> Charge:
    reported = statistics.median(sub.reported)
    # what the judge's clock saw of `time` beyond the report, against the baseline's (the same
    # harness code): a forged report, or work after the clock stopped, shows as more
    time_excess, time_z = _excess(sub.overhead, base.overhead)
    prepare_excess, prepare_z = _excess(sub.prepare_rt, base.prepare_rt)
    allowance = ALLOWANCE_MS + ALLOWANCE_FRACTION * reported
    return Charge(reported, time_excess, prepare_excess,
                  time_z > SIGNIFICANCE and time_excess > allowance,
                  prepare_z > SIGNIFICANCE and prepare_excess > allowance)


Request = Callable[[str, dict], dict]  # (role, message) -> reply; failures raise
Freeze = Callable[[str, bool], object]  # (role, frozen): stop or resume that contender


def interleave(request: Request, freeze: Freeze, timing: Timing) -> dict[str, Samples]:
    """Alternate `prepare` + `time` between the two contenders in a random order each round,
    until both reports' relative standard errors reach the target (or a cap is hit); the one
    whose turn it is not is frozen."""
    samples = {"submission": Samples(), "baseline": Samples()}
    roles = list(samples)
    for role in roles:
        freeze(role, True)
    started = time.monotonic()
    try:
        while True:
            random.shuffle(roles)
            for role in roles:
                freeze(role, False)
                _turn(request, role, samples[role])
                freeze(role, True)
            n = len(samples["submission"].reported)
            if n >= timing.max_reps or (n >= 3 and time.monotonic() - started > timing.max_s):
                return samples
            if all(scoring.converged(s.reported, timing.target_rse, timing.min_reps)
                   for s in samples.values()):
                return samples
    finally:
        for role in roles:
            freeze(role, False)


def _turn(request: Request, role: str, got: Samples) -> None:
    sent = time.perf_counter()
    request(role, {"op": "prepare"})
    prepared = time.perf_counter()
    reply = request(role, {"op": "time"})
    done = time.perf_counter()
    got.prepare_rt.append((prepared - sent) * 1000)
    got.time_rt.append((done - prepared) * 1000)
    got.reported.append(reply["ms"])
