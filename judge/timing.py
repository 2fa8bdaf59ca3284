"""Timing one test point: the submission and the baseline alternate, and the time that scores.

Trusted side. Each round, in a random order, each contender gets a `prepare` request (copy in the
round's fresh inputs, poison its outputs, flush the cache) and a `time` request (one call, whose
duration the harness reports, then its outputs written to a file).

Every round has inputs of its own, drawn from a seed of that round and written while both
contenders are frozen, so no answer replayed from an earlier call — keyed by address, content or
call count — is right without doing the work, and no input exists before its round. Each round's
output files are taken out of the contenders' reach as soon as their turn ends; a uniformly random
subset of the rounds (reservoir sampling, so the draw is complete only after the last call) is
checked against the reference.
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
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

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


Request = Callable[..., dict]  # (role, op, **fields) -> reply; failures raise
Freeze = Callable[[str, bool], object]  # (role, frozen): stop or resume that contender


class FreshRounds:
    """The rounds of one test point: fresh inputs before each, outputs taken away after each
    contender's turn, and a uniformly random subset of `keep` rounds kept for checking.

    `write_inputs(index)` writes round `index`'s inputs and returns the path the contenders read
    them from; `outputs[role]` is (the path a contender writes its outputs to, the same file seen
    from the host); kept outputs move to `kept_dir`, which no sandbox mounts.
    """

    def __init__(self, write_inputs: Callable[[int], str], outputs: dict[str, tuple[str, Path]],
                 kept_dir: Path, keep: int):
        self.write_inputs = write_inputs
        self.outputs = outputs
        self.kept_dir = kept_dir
        self.keep = keep
        self.rounds = 0
        self.slots: dict[int, int] = {}  # reservoir slot -> round index
        self._slot: int | None = None  # where the current round goes, if kept
        self._random = random.SystemRandom()  # its state cannot be inferred from the draws
        for role in outputs:
            (kept_dir / role).mkdir(parents=True, exist_ok=True)

    def begin(self) -> str:
        """Start a round (both contenders frozen): its inputs, and whether it is kept."""
        index, self.rounds = self.rounds, self.rounds + 1
        pick = index if index < self.keep else self._random.randrange(index + 1)
        self._slot = pick if pick < self.keep else None
        if self._slot is not None:
            self.slots[self._slot] = index
        return self.write_inputs(index)

    def save_path(self, role: str) -> str:
        return self.outputs[role][0]

    def end(self, role: str) -> None:
        """After `role`'s turn (frozen again): its outputs leave its reach, kept or deleted."""
        written = self.outputs[role][1]
        if self._slot is not None:
            target = self.kept_dir / role / f"{self._slot}.raw"
            target.unlink(missing_ok=True)  # a kept round it replaces
            if os.path.lexists(written):
                os.replace(written, target)
        elif os.path.lexists(written):
            os.unlink(written)

    def kept(self, role: str) -> list[tuple[int, Path]]:
        """(round index, output file) of every kept round, in round order."""
        return sorted((index, self.kept_dir / role / f"{slot}.raw")
                      for slot, index in self.slots.items())


def interleave(request: Request, freeze: Freeze, timing: Timing,
               rounds: FreshRounds) -> dict[str, Samples]:
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
            inputs = rounds.begin()
            random.shuffle(roles)
            for role in roles:
                freeze(role, False)
                _turn(request, role, samples[role], inputs, rounds.save_path(role))
                freeze(role, True)
                rounds.end(role)
            n = len(samples["submission"].reported)
            if n >= timing.max_reps or (n >= 3 and time.monotonic() - started > timing.max_s):
                return samples
            if all(scoring.converged(s.reported, timing.target_rse, timing.min_reps)
                   for s in samples.values()):
                return samples
    finally:
        for role in roles:
            freeze(role, False)


def _turn(request: Request, role: str, got: Samples, inputs: str, save: str) -> None:
    sent = time.perf_counter()
    request(role, "prepare", inputs=inputs)
    prepared = time.perf_counter()
    reply = request(role, "time", save=save)
    done = time.perf_counter()
    got.prepare_rt.append((prepared - sent) * 1000)
    got.time_rt.append((done - prepared) * 1000)
    got.reported.append(reply["ms"])
