"""Timing one test point: the submission and the baseline alternate, and the time that scores.

Trusted side. A round gives each contender, in a random order, one timed call of `run_kernel`:
on the CPU device the judge flushes the cache from a process of its own (judge/judging/flusher.py) and
sends one `time` request; on a GPU the harness gets a `prepare` request first (copy the inputs to
the device, poison the outputs there, flush the L2), then `time` (the call alone), then `collect`
(copy the outputs back to the file the judge maps): the copies, whose time varies with the
process (pageable pages, placement), stay out of the request the call is judged by, and are
compared with the baseline's own (the same bytes, from pinned mappings where CUDA allows).

Fresh inputs for every call: each round's inputs are drawn from a seed of that round and written,
with the outputs poisoned, into files both sides map (judge/judging/shared.py) while both contenders are
frozen, so no answer replayed from an earlier call — keyed by address, content or call count — is
right without doing the work, and no input exists before its round. After each turn the judge
reads what the contender wrote; a uniformly random subset of the rounds (reservoir sampling: the
draw is complete only after the last call) is checked against the reference.

The judge's own clock times every request from outside the sandbox. The harness's report is
precise but lives in the contestant's process, so it can be forged; the judge's clock cannot, but
carries the protocol's overhead, which the baseline's harness (the same code, no contestant code)
measures. The time charged is the reported one unless the judge's clock shows significantly more
— in the `time` request beyond the baseline's overhead, or in `prepare` beyond the baseline's
`prepare` — and then that excess is charged in full: work moved out of the measured call, or a
report lowered by patching the harness, costs what the judge saw. Below an allowance (see
ALLOWANCE_MS) the judge's clock cannot tell a forgery from two processes' honest differences.
On the CPU device, where each turn's CPU time is counted (below), that exact meter charges hidden
work and the judge's clock counts only beyond a wider backstop (BACKSTOP_MS).

Between its turns a contender is frozen whole (its cgroup's freezer), and on the CPU device both
keep to the same CPUs: a thread the submission left running can neither slow the baseline down
nor work unseen. It runs only while its run is thawed, and on the CPU device each turn's CPU time
(the run's cgroup, read while frozen) beyond the report and the baseline's is charged too — the
stretch between a reply and the freeze, which the judge's clock does not cover, included.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import statistics
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from judge.judging import scoring
from judge.judging.shared import SharedTensors
from judge.problem.schema import Timing

# An excess is charged when it is this many standard errors above zero (the two contenders'
# samples paired round by round) and above an allowance: two honest harness processes differ
# systematically by tens of microseconds per request on a busy 2-core VM, which the judge
# cannot tell from a forgery of that size (on the CPU device up to ~0.1 ms: see BACKSTOP_MS,
# bench/cpu_timing.py). On a GPU, where the allowance applies to the clock, it is not measured yet:
# the device self-test's `floor` stage measures it (each baseline judged against itself).
SIGNIFICANCE = 3.0
ALLOWANCE_MS = 0.05
ALLOWANCE_FRACTION = 0.05  # of the reported time
# Where each turn's CPU time is counted (the CPU device), that exact meter charges hidden work and
# the judge's clock is a backstop for what CPU time cannot show: only a wide excess counts. Two
# honest harness processes there differed by up to ~0.1 ms per `time` request on a 0.6 ms call
# (a C++ softmax against PyTorch's, 2-CPU VM, 2026-12-01), with no CPU time behind it:
# scheduling, not work.
BACKSTOP_MS = 0.25
BACKSTOP_FRACTION = 0.25
# A time charged under a physical bound (the empty call's floor, the roofline) is raised to it;
# more than this fraction under it is also flagged (an honest call sits at the floor at best, and
# near the roofline only by the noise of both figures)
PHYSICS_MARGIN = 0.1
# Turns per test point in which the baseline's harness (no contestant code: no thread of the
# submission runs unmetered meanwhile) times an empty run_kernel called the submission's way
# under the same conditions (flush, thaw, fresh inputs): the floor reported with the point. Its
# first rounds only: a few milliseconds per point.
FLOOR_TURNS = 8


@dataclass
class Samples:
    """One contender's measurements at one test point, in milliseconds."""

    reported: list[float] = field(default_factory=list)  # by the harness, around the call
    time_rt: list[float] = field(default_factory=list)  # by the judge, around `time`
    # by the judge, around `prepare` and `collect` together (GPUs: the copies and the flush)
    prepare_rt: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # the run's CPU time over each turn (cgroup)
    floor: list[float] = field(default_factory=list)  # an empty run_kernel (baseline's harness)
    throttled: int = 0  # rounds left out because the GPU's clock was throttled in them

    def extend(self, other: Samples) -> None:
        """Add a round's samples (kept in a Samples of their own until the round is judged)."""
        for name, values in vars(other).items():
            if isinstance(values, list):
                getattr(self, name).extend(values)

    @property
    def overhead(self) -> list[float]:
        """What the judge saw of each `time` request beyond the reported call."""
        return [rt - ms for rt, ms in zip(self.time_rt, self.reported)]

    @property
    def cpu_overhead(self) -> list[float]:
        """CPU time each turn used beyond the reported call: the harness's own, and whatever the
        run did unseen (a thread working after the reply, until the freeze)."""
        return [cpu - ms for cpu, ms in zip(self.cpu, self.reported)]


@dataclass(frozen=True)
class Charge:
    """The time that scores for the submission, and what the judge's clock added to it."""

    reported_ms: float  # median of the harness's reports
    time_excess_ms: float  # judge's clock beyond the report and the baseline's overhead
    prepare_excess_ms: float  # `prepare` beyond the baseline's
    charged_time: bool  # whether each excess was significant, hence charged
    charged_prepare: bool
    cpu_excess_ms: float = 0.0  # the run's CPU time per turn beyond the baseline's
    charged_cpu: bool = False

    @property
    def ms(self) -> float:
        # the judge's clock and the run's CPU time are two views of the same hidden work
        hidden = max(self.time_excess_ms if self.charged_time else 0.0,
                     self.cpu_excess_ms if self.charged_cpu else 0.0)
        return (self.reported_ms + hidden
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


def _mean_excess(values: list[float], reference: list[float]) -> tuple[float, float]:
    """As `_excess`, with the mean: for CPU time, which is conserved (work split unevenly over
    the turns counts in full) and which the host's jitter barely touches."""
    differences = [v - r for v, r in zip(values, reference)]
    excess = statistics.fmean(differences)
    noise = statistics.stdev(differences) / math.sqrt(len(differences)) if len(
        differences) > 1 else 0.0
    return excess, excess / noise if noise > 0 else (math.inf if excess > 0 else 0.0)


def charge(sub: Samples, base: Samples) -> Charge:
    reported = statistics.median(sub.reported)
    # what the judge's clock saw of `time` beyond the report, against the baseline's (the same
    # harness code): a forged report, or work after the clock stopped, shows as more
    time_excess, time_z = _excess(sub.overhead, base.overhead)
    prepare_excess, prepare_z = (_excess(sub.prepare_rt, base.prepare_rt) if sub.prepare_rt
                                 else (0.0, 0.0))
    # CPU time over each turn (read while the run is frozen, so exact), against the median
    # report rather than each turn's own: work a thread did after the reply shows only there,
    # and what spills into the next call inflates that call's report, which the median ignores
    counted = len(sub.cpu) == len(sub.reported) > 0 and len(base.cpu) == len(base.reported)
    cpu_excess, cpu_z = (_mean_excess([cpu - reported for cpu in sub.cpu], base.cpu_overhead)
                         if counted else (0.0, 0.0))
    allowance = ALLOWANCE_MS + ALLOWANCE_FRACTION * reported
    wall_allowance = BACKSTOP_MS + BACKSTOP_FRACTION * reported if counted else allowance
    # the CPU view is a mean: an honest run's slow turns lift it above the median report by the
    # reports' own skew, which is not hidden work
    skew = max(statistics.fmean(sub.reported) - reported, 0.0)
    return Charge(reported, time_excess, prepare_excess,
                  time_z > SIGNIFICANCE and time_excess > wall_allowance,
                  prepare_z > SIGNIFICANCE and prepare_excess > allowance,
                  cpu_excess, cpu_z > SIGNIFICANCE and cpu_excess > allowance + skew)


class GpuThrottled(Exception):
    """The GPU's clock was throttled in nearly every timed call: no time to score (the judge's
    problem: a hot or power-capped card)."""


Request = Callable[..., dict]  # (role, op, **fields) -> reply; failures raise
Freeze = Callable[[str, bool], object]  # (role, frozen): stop or resume that contender


class FreshRounds:
    """The rounds of one test point: fresh inputs and poisoned outputs before each, outputs read
    after each contender's turn, and a uniformly random subset of `keep` rounds kept.

    `draw(index)` draws round `index`'s inputs (in the judge's memory, which no contender maps)
    and `write(drawn)` writes them where both contenders read them (on `cpus`, the contenders'
    CPUs, where given); `outputs[role]` is that contender's output tensors, shared with it
    (judge/judging/shared.py); kept outputs are written to `kept_dir`, which no sandbox mounts.

    With `ahead_cpus` (CPUs the contenders do not use) the next round's inputs are drawn there
    while the current round's turns run: drawing is most of a round's cost for large inputs
    (~8 ms per million normal floats here), and it then leaves the timed turns' CPUs alone. The
    drawn inputs stay in the judge's memory until their round begins, so no contender sees a
    round's inputs before it.
    """

    def __init__(self, draw: Callable[[int], object], write: Callable[[object], None],
                 outputs: dict[str, SharedTensors], kept_dir: Path, keep: int,
                 cpus: set[int] | None = None, ahead_cpus: set[int] | None = None):
        self.draw = draw
        self.write = write
        self.cpus = cpus  # where the writes are made (see on_cpus)
        self.outputs = outputs
        self.kept_dir = kept_dir
        self.keep = keep
        self.rounds = 0
        self.slots: dict[int, int] = {}  # reservoir slot -> round index
        self._slot: int | None = None  # where the current round goes, if kept
        self._random = random.SystemRandom()  # its state cannot be inferred from the draws
        self.ahead_cpus = ahead_cpus
        self._ahead = ThreadPoolExecutor(1, "kjudge-draw") if ahead_cpus else None
        self._next: Future | None = None  # the next round's inputs, being drawn
        for role in outputs:
            (kept_dir / role).mkdir(parents=True, exist_ok=True)

    def begin(self) -> None:
        """Start a round (both contenders frozen): its inputs, and whether it is kept."""
        index, self.rounds = self.rounds, self.rounds + 1
        pick = index if index < self.keep else self._random.randrange(index + 1)
        self._slot = pick if pick < self.keep else None
        if self._slot is not None:
            self.slots[self._slot] = index
        drawn = self._next.result() if self._next is not None else self.draw(index)
        with on_cpus(self.cpus):
            self.write(drawn)
            for shared in self.outputs.values():
                shared.poison()
        if self._ahead is not None:
            self._next = self._ahead.submit(self._draw_ahead, index + 1)

    def _draw_ahead(self, index: int):
        os.sched_setaffinity(0, self.ahead_cpus)  # this thread: off the contenders' CPUs
        return self.draw(index)

    def close(self) -> None:
        """Stop drawing ahead (the last round drawn ahead is never used)."""
        if self._ahead is not None:
            self._ahead.shutdown(wait=True, cancel_futures=True)
            self._ahead, self._next = None, None

    def end(self, role: str) -> None:
        """After `role`'s turn (frozen again): keep what it wrote if the round is kept."""
        if self._slot is not None:
            (self.kept_dir / role / f"{self._slot}.raw").write_bytes(
                self.outputs[role].snapshot())

    def kept(self, role: str) -> list[tuple[int, Path]]:
        """(round index, output file) of every kept round, in round order."""
        return sorted((index, self.kept_dir / role / f"{slot}.raw")
                      for slot, index in self.slots.items())


@contextlib.contextmanager
def on_cpus(cpus: set[int] | None) -> Iterator[None]:
    """Keep the calling thread on `cpus` (the contenders' CPUs) while it writes a round.

    The judge writes each round's inputs and poisons the outputs between turns; written from
    another core, they would wait for the next call dirty in that core's private cache, to be
    fetched across cores at a cost that depends on whatever the judge did since — the largest
    difference between two judgings of one submission (a PyTorch softmax measured 110-138 µs from
    one judging to the next, 130-141 µs with the writes made here). The contenders are frozen
    while the judge writes, so it takes nothing from them; it goes back at once, so that its
    wake-ups around the timed requests do not queue behind the contenders."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)  # pid 0: this thread only
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


# Where the problem limits the submission's operators, one round in AUDIT_EVERY (drawn at random,
# unseen by the run until its call) is an audit: the submission's timed call runs with the
# operators recorded, and that round's samples of both contenders are left out of the timing.
# Its other timed calls are not recorded (a dispatch mode costs every ATen call Python time that
# the baseline does not pay), and a run that counts its calls cannot know which are audited.
AUDIT_EVERY = 8


def interleave(request: Request, freeze: Freeze, timing: Timing, rounds: FreshRounds,
               flush: Callable[[], None] | None = None,
               cpu_ns: Callable[[str], int | None] | None = None,
               floor_loader: str | None = None, audit: bool = False,
               throttled: Callable[[], bool] | None = None) -> dict[str, Samples]:
    """Alternate turns between the two contenders in a random order each round, until both
    reports' relative standard errors reach the target (or a cap is hit); the one whose turn it
    is not is frozen; in the first rounds the baseline's harness also times an empty run_kernel
    called as `floor_loader` calls one (the submission's floor). With `flush` (the CPU device)
    the judge flushes the cache before a turn and a turn is one `time` request; without, the
    harness flushes in a `prepare` request (GPUs).
    With `cpu_ns` (a contender's CPU time so far, read while it is frozen) each turn's CPU time
    is recorded too. With `audit`, some rounds are audits (AUDIT_EVERY): not in the samples.
    With `throttled` (asked right after each turn: was the GPU's clock throttled?) a round with
    a throttled turn is left out and another one run; a GPU that throttles every call is
    GpuThrottled once the time cap is four times over."""
    samples = {"submission": Samples(), "baseline": Samples()}
    roles = list(samples)
    draw = random.SystemRandom()

    def floor_turn(got: Samples) -> None:
        if flush is not None:
            flush()
        freeze("baseline", False)
        if flush is None:
            request("baseline", "prepare", fresh=True)
        got.floor.append(request("baseline", "time", fresh=True, empty=floor_loader)["ms"])
        if flush is None:
            request("baseline", "collect")
        freeze("baseline", True)

    for role in roles:
        freeze(role, True)
    started = time.monotonic()
    try:
        while True:
            rounds.begin()
            random.shuffle(roles)
            audited = audit and draw.randrange(AUDIT_EVERY) == 0
            turns, hot = {role: Samples() for role in roles}, False
            for role in roles:
                if flush is not None:
                    flush()
                got = turns[role]
                before = cpu_ns(role) if cpu_ns else None
                freeze(role, False)
                _turn(request, role, got, prepare=flush is None,
                      record=audited and role == "submission")
                hot = hot or bool(throttled and throttled())
                freeze(role, True)
                after = cpu_ns(role) if cpu_ns else None
                if before is not None and after is not None:
                    got.cpu.append((after - before) / 1e6)
                rounds.end(role)
            if hot:
                samples["submission"].throttled += 1
            elif not audited:  # an audit's samples, and a throttled round's, are left out
                for role in roles:
                    samples[role].extend(turns[role])
            if floor_loader and len(samples["submission"].floor) < FLOOR_TURNS:
                floor_turn(samples["submission"])
            n = len(samples["submission"].reported)
            if (n < 3 and samples["submission"].throttled
                    and time.monotonic() - started > 4 * timing.max_s):
                raise GpuThrottled(f"{samples['submission'].throttled} of {rounds.rounds} timed "
                                   "rounds ran on a throttled GPU clock")
            if n >= timing.max_reps or (n >= 3 and time.monotonic() - started > timing.max_s):
                return samples
            if all(scoring.converged(s.reported, timing.target_rse, timing.min_reps)
                   for s in samples.values()):
                return samples
    finally:
        for role in roles:
            freeze(role, False)


def _turn(request: Request, role: str, got: Samples, prepare: bool, record: bool = False) -> None:
    """One contender's timed call. With `prepare` (GPUs): `prepare` copies the inputs in and
    flushes, `time` is the call alone, `collect` copies the outputs out; the copies' requests
    are timed together and compared with the baseline's (the same bytes), the call's request
    with the report."""
    staged = 0.0
    if prepare:
        sent = time.perf_counter()
        request(role, "prepare", fresh=True)
        staged += time.perf_counter() - sent
    sent = time.perf_counter()
    reply = request(role, "time", fresh=True, **({"record": True} if record else {}))
    got.time_rt.append((time.perf_counter() - sent) * 1000)
    got.reported.append(reply["ms"])
    if prepare:
        sent = time.perf_counter()
        request(role, "collect")
        staged += time.perf_counter() - sent
        got.prepare_rt.append(staged * 1000)
