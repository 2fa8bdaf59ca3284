"""Timing one test point: the submission and the baseline alternate, and the time that scores.

Trusted side. A round gives each contender one timed turn (each first in half the rounds): a
batch of consecutive calls of `run_kernel`, each on its own fresh inputs. On the CPU device the judge
flushes the cache from a process of its own (judge/judging/flusher.py) and sends one `time`
request; on a GPU the harness gets a `prepare` request first (copy the batch's inputs to the
device, poison the outputs there, flush the L2), then `time` (the calls alone), then `collect`
(copy the outputs back to the file the judge maps): the copies, whose time varies with the
process (pageable pages, placement), stay out of the request the calls are judged by, and are
compared with the baseline's own (the same bytes per call, from pinned mappings where CUDA allows).

Fresh inputs for every call: each call's inputs are drawn from a seed of its own and written, with
the outputs poisoned, into files both sides map (judge/judging/shared.py) while both contenders
are frozen, so no answer replayed from an earlier call — keyed by address, content or call count
— is right without doing the work, and no input exists before its round. After each turn the
judge reads what the contender wrote; a uniformly random subset of all the calls (reservoir
sampling: the draw is complete only after the last call) is checked against the reference, and so
is every call whose outputs look skipped at a sample of their elements (left poisoned, one value
throughout, or the call before's).

The judge's own clock scores. It times every request from outside the sandbox; the harness's
report is precise but lives in the contestant's process, so it can be forged, and it is kept
for the record only. A batch lasts at least BATCH_MS on the judge's clock, so that what that
clock cannot tell apart (two processes' round trips differ by tens of microseconds) is a small
part of it; the baseline's harness (the same code, no contestant code) measures in floor turns
what a request carries besides the calls — its round trip, the harness's work around each call —
and the time per call is the round trip less those. What the clock saw beyond the report, against
the baseline's same figure, says that the report was short (flagged); `prepare` beyond the
baseline's per call, and on the CPU device the run's CPU time outside the clock, is work moved out
of the timed request and charged on top when significant and above an allowance (ALLOWANCE_MS).

Between its turns a contender is frozen whole (its cgroup's freezer), and on the CPU device both
keep to the same CPUs: a thread the submission left running can neither slow the baseline down
nor work unseen. It runs only while its run is thawed: on the CPU device from the moment the
turn's request is written (the clock running) until the kernel has frozen the run again, which
the reader of its replies asks for as soon as the reply arrives; each turn's CPU time (the run's
cgroup, read while frozen) is counted, that delay after the reply (~0.3 ms here) included.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from judge.harness.protocol import slot_stride
from judge.judging import scoring
from judge.judging.shared import SharedTensors
from judge.problem.schema import Timing

# Work moved out of the timed request (into `prepare`, or after it on the CPU) is charged when
# it is this many standard errors above zero (the two contenders' samples paired round by
# round) and above an allowance of a turn: two honest harness processes differ systematically
# by tens of microseconds per request on a busy 2-core VM (bench/cpu_timing.py), and a GPU's
# copies by a fraction of the turn. The CPU time after a reply is exact and per turn (the
# kernel's delay in freezing the run, no copy): the fixed part alone. The same bound decides
# whether a report short of the clock is flagged (it scores in any case).
SIGNIFICANCE = 3.0
ALLOWANCE_MS = 0.05
ALLOWANCE_FRACTION = 0.05  # of the turn's time on the clock
# A time charged under a physical bound (the empty call's floor, the roofline) is raised to it;
# more than this fraction under it is also flagged (an honest call sits at the floor at best, and
# near the roofline only by the noise of both figures)
PHYSICS_MARGIN = 0.1
# Turns per test point in which the baseline's harness (no contestant code: no thread of the
# submission runs unmetered meanwhile) measures, under the same conditions (flush, thaw, fresh
# inputs), what the timed requests carry besides the calls: a request with no call (the round
# trip) and a batch of empty run_kernels called the submission's way (the harness's own work
# around each call, and the floor reported with the point). Its first rounds only.
FLOOR_TURNS = 8
# The judge's clock scores: a turn is a batch of consecutive calls, each on its own fresh inputs,
# that lasts at least BATCH_MS on that clock, so that what the clock cannot resolve (the round
# trip's variation between two processes, tens of microseconds; the first call's cold caches;
# what a run could start before its request arrives) is a small part of it — whatever the run's
# harness reports. (At 2 ms honest speedups were 2-6 % off at 50-500 µs calls here; at 10 ms
# within 0.3 %: bench/clock_resolution.py.) The batch grows from one call until it lasts that
# long; a round in which a contender's batch was shorter is not scored. A batch has at most
# MAX_BATCH_CALLS calls, and its inputs (or outputs) at most CPU_BATCH_BYTES (GPU_BATCH_BYTES):
# every call's inputs are drawn fresh (~8 ms per million normal floats on this CPU), so a batch
# of large calls is bounded by what the judge can draw per round rather than by its length.
BATCH_MS = 10.0
MAX_BATCH_CALLS = 1024
CPU_BATCH_BYTES = 16 << 20
GPU_BATCH_BYTES = 256 << 20  # a GPU's calls read their inputs far faster than a CPU draws them


def batch_slots(set_bytes: int, device_kind: str = "cpu") -> int:
    """How many calls a batch can hold when a call's inputs (or outputs) take `set_bytes`."""
    budget = CPU_BATCH_BYTES if device_kind == "cpu" else GPU_BATCH_BYTES
    return max(1, min(MAX_BATCH_CALLS, budget // slot_stride(set_bytes)))


SWITCH_INTERVAL_S = 5e-5  # the GIL's, while a test point is timed (see interleave)
# Timed calls checked against the reference (a uniform draw over all of them, made once they are
# over): at least the problem's `checked_calls`, more where outputs are small (a batch of tiny
# calls holds hundreds; a run that skips the work in one call of a hundred escapes 8 checks 92 %
# of the time, 256 checks 8 %), as many as CHECKED_BYTES of outputs (the baseline's: a check of
# the judge itself, as many as BASELINE_CHECKED_BYTES, one at least and BASELINE_MAX_CHECKED at
# most, whatever the problem asks of the submission), at most MAX_CHECKED. A check costs about as
# much as drawing the call's inputs again (~20 ms for vector_add's 4 MB point here, ~2 ms at
# 256 KB: bench/round_cost.py).
CHECKED_BYTES = 16 << 20
BASELINE_CHECKED_BYTES = 4 << 20
MAX_CHECKED = 256
BASELINE_MAX_CHECKED = 8


# Besides that draw, every timed call's outputs are sampled (SKIP_SAMPLES elements of each output,
# at random, drawn after the turn before): a call whose outputs look skipped there (looks_skipped:
# left as the judge poisoned them, one value throughout, or what the call before left) is checked
# in full — up to MAX_SUSPECTS calls a contender and point — even one call in a thousand, where
# the draw checks only a few. An honest output that looks so (NaN where the reference has NaN, a
# constant output) passes its checks; more of them would only cost.
SKIP_SAMPLES = 64
MAX_SUSPECTS = 16
PARALLEL_DRAW_BYTES = 64 << 10  # a call's inputs drawn on several threads from this size
# A kept call's outputs up to this size are held in the judge's memory until checked (at most
# CHECKED_BYTES a contender, or the problem's own count of calls of this size), larger ones
# written to a file at once
HELD_BYTES = 1 << 20


def looks_skipped(got: list[torch.Tensor], poison: list[torch.Tensor],
                  before: list[torch.Tensor] | None) -> torch.Tensor:
    """Per call of a turn, whether one of its outputs, at the sampled positions (a row per call
    and output, as bits: SharedTensors.sample), still holds the poison at more than an eighth of
    them, holds one value throughout (a fill), or holds exactly what the call before it left (a
    stale copy; `before`: the last call of the turn before, at these positions)."""
    skipped = torch.zeros(got[0].shape[0], dtype=torch.bool)
    for index, (rows, poisoned) in enumerate(zip(got, poison)):
        if rows.shape[1] == 0:  # an empty output: nothing to skip
            continue
        skipped |= (rows == poisoned).sum(1) * 8 > rows.shape[1]
        skipped |= (rows == rows[:, :1]).all(1)
        if before is not None:
            rows = torch.cat([before[index][None], rows])
        stale = (rows[1:] == rows[:-1]).all(1)
        skipped[len(skipped) - len(stale):] |= stale
    return skipped


def checked_calls(at_least: int, output_bytes: int) -> dict[str, int]:
    """The calls drawn for a check, by contender: the problem's `at_least` is the submission's
    (the baseline is the organizer's code; its checks test the judge's plumbing, and eight of
    vector_add's 4 MB calls cost a judging ~0.1 s to check)."""
    size = max(output_bytes, 1)
    return {"submission": max(at_least, min(MAX_CHECKED, CHECKED_BYTES // size)),
            "baseline": max(1, min(BASELINE_MAX_CHECKED, BASELINE_CHECKED_BYTES // size))}


@dataclass
class Samples:
    """One contender's measurements at one test point, a turn (a batch of calls) each, in
    milliseconds."""

    reported: list[float] = field(default_factory=list)  # by the harness: the calls' median
    time_rt: list[float] = field(default_factory=list)  # by the judge, around `time`
    calls: list[int] = field(default_factory=list)  # calls in the batch
    # by the judge, around `prepare` and `collect` together (GPUs: the copies and the flush)
    prepare_rt: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # the run's CPU time over each turn (cgroup)
    first: list[bool] = field(default_factory=list)  # whether the turn came first in its round
    # the baseline's harness, in floor turns: an empty run_kernel's reported time (the floor);
    # the round trip of a request with no call, and the `prepare` and `collect` of none; a batch
    # of empty calls (its round trip and its number of calls)
    floor: list[float] = field(default_factory=list)
    request_rt: list[float] = field(default_factory=list)
    staging_rt: list[float] = field(default_factory=list)
    empty_rt: list[float] = field(default_factory=list)
    empty_calls: list[int] = field(default_factory=list)
    throttled: int = 0  # rounds left out because the GPU's clock was throttled in them

    def extend(self, other: Samples) -> None:
        """Add a round's samples (kept in a Samples of their own until the round is judged)."""
        for name, values in vars(other).items():
            if isinstance(values, list):
                getattr(self, name).extend(values)

    def per_call(self, floor: Floor) -> list[float]:
        """Each turn's time per call on the judge's clock: the round trip less a request's own,
        over the calls, less the harness's work around each call."""
        return [(rt - floor.request_ms) / calls - floor.around_call_ms
                for rt, calls in zip(self.time_rt, self.calls)]

    def stats(self, floor: Floor) -> scoring.Stats:
        """The time per call's statistics, its median balanced over the turn's place in the
        round (`balanced_median`), its spread and standard error those within a place."""
        per_call = self.per_call(floor)
        within = scoring.Stats.of(_without_place(per_call, self.first))
        return replace(scoring.Stats.of(per_call), median=balanced_median(per_call, self.first),
                       rse=within.rse, iqr_rel=within.iqr_rel)


def balanced_median(values: list[float], first: list[bool]) -> float:
    """The geometric mean of the median of the turns that came first in their round and of
    those that came second, where there are both: the place in a round moves a turn's time by
    several % on this VM (the first of vector_add's 4 MB batches 7-8 % slower than the second),
    the same for both contenders, so that the plain median of a mix of both places jumps between
    them from one judging to the next; the balanced one cancels a factor common to both."""
    ahead = [v for v, f in zip(values, first) if f]
    behind = [v for v, f in zip(values, first) if not f]
    if not ahead or not behind or len(first) != len(values):
        return statistics.median(values)
    a, b = statistics.median(ahead), statistics.median(behind)
    return math.sqrt(a * b) if a > 0 and b > 0 else (a + b) / 2


def _without_place(values: list[float], first: list[bool]) -> list[float]:
    """`values` each scaled by its place's median to their balanced median: what is left
    varies within a place only (unchanged where there are not both places)."""
    ahead = [v for v, f in zip(values, first) if f]
    behind = [v for v, f in zip(values, first) if not f]
    if not ahead or not behind or len(first) != len(values):
        return values
    medians = {True: statistics.median(ahead), False: statistics.median(behind)}
    if min(medians.values()) <= 0:
        return values
    balanced = balanced_median(values, first)
    return [v * balanced / medians[f] for v, f in zip(values, first)]


@dataclass(frozen=True)
class Floor:
    """What the baseline's harness measured of the timed requests besides the calls."""

    request_ms: float = 0.0  # a `time` request with no call, round trip
    staging_ms: float = 0.0  # `prepare` and `collect` of no call (GPUs: the flush)
    around_call_ms: float = 0.0  # the harness's work around each call, outside its report
    empty_call_ms: float | None = None  # an empty run_kernel's reported time

    @classmethod
    def of(cls, base: Samples) -> Floor:
        if not base.request_rt:
            return cls()
        request = statistics.median(base.request_rt)
        empty = statistics.median(base.floor) if base.floor else None
        around = 0.0
        if base.empty_rt and empty is not None:
            around = max(statistics.median((rt - request) / n for rt, n in
                                           zip(base.empty_rt, base.empty_calls)) - empty, 0.0)
        return cls(request, statistics.median(base.staging_rt) if base.staging_rt else 0.0,
                   around, empty)


@dataclass(frozen=True)
class Charge:
    """The time that scores for the submission (per call), and how it was made up."""

    clock_ms: float  # the judge's clock per call (Samples.per_call): what scores
    reported_ms: float  # median of the harness's reports
    time_excess_ms: float  # the clock beyond the report, beyond the baseline's same figure
    charged_time: bool  # that excess is significant: the report was short (forged)
    prepare_excess_ms: float = 0.0  # `prepare` beyond the baseline's, per call
    charged_prepare: bool = False
    cpu_excess_ms: float = 0.0  # the run's CPU time outside the clock, beyond the baseline's
    charged_cpu: bool = False

    @property
    def forged(self) -> bool:
        """A significant difference between what the run reported and what it was charged."""
        return self.charged_time or self.charged_prepare or self.charged_cpu

    @property
    def ms(self) -> float:
        """The clock, and what the run did outside it: CPU time before or after the request
        (the CPU device), work moved into `prepare` or `collect` (GPUs)."""
        return (self.clock_ms + (self.cpu_excess_ms if self.charged_cpu else 0.0)
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
    return excess, _in_errors(excess, _median_se(differences))


def _in_errors(excess: float, noise: float) -> float:
    """`excess` in standard errors of `noise` (a noiseless excess is infinitely significant)."""
    return excess / noise if noise > 0 else (math.inf if excess > 0 else 0.0)


def _cpu_excess(sub: Samples, base: Samples) -> tuple[float, float]:
    """The run's CPU time per turn outside the judge's clock, beyond the baseline's, and in
    standard errors (as `_excess`). Per turn, the CPU time less the clock, above the baseline's
    usual figure (its median) and never below zero: a turn whose clock holds time the run did
    not spend on the CPU (a wait, a preemption) must not offset the others, nor spread them out
    of significance. Of the paired differences, the mean (CPU time is conserved: work left to a
    few turns counts in full) or, where larger, the median (the typical turn, which the median
    clock scores: a run that sleeps in some turns hides the work left in those)."""
    usual = statistics.median(c - rt for c, rt in zip(base.cpu, base.time_rt))
    sub_out, base_out = ([max(0.0, c - rt - usual) for c, rt in zip(got.cpu, got.time_rt)]
                         for got in (sub, base))
    differences = [s - b for s, b in zip(sub_out, base_out)]
    mean = statistics.fmean(differences)
    noise = statistics.stdev(differences) / math.sqrt(len(differences)) if len(
        differences) > 1 else 0.0
    return max((mean, _in_errors(mean, noise)), _excess(sub_out, base_out))


def charge(sub: Samples, base: Samples, floor: Floor | None = None) -> Charge:
    """What the submission's calls are charged (see Charge), with the floors measured in the
    baseline's harness (`floor`: Floor.of(base), where the caller has it already)."""
    floor = floor or Floor.of(base)
    sub_clock, base_clock = sub.per_call(floor), base.per_call(floor)
    clock, reported = balanced_median(sub_clock, sub.first), statistics.median(sub.reported)
    calls = statistics.median(sub.calls)
    # per turn, what the clock saw beyond the reports, against the baseline's (the same harness
    # code): a forged report shows as more. It does not change the score (the clock is the
    # score); it says that the report was short
    time_excess, time_z = _excess([(c - r) * n for c, r, n in zip(sub_clock, sub.reported,
                                                                   sub.calls)],
                                  [(c - r) * n for c, r, n in zip(base_clock, base.reported,
                                                                   base.calls)])
    allowance = ALLOWANCE_MS + ALLOWANCE_FRACTION * clock * calls  # of a turn
    result = Charge(clock, reported, time_excess / calls,
                    time_z > SIGNIFICANCE and time_excess > allowance)
    if sub.prepare_rt and base.prepare_rt:  # the copies per call, beyond a flush's
        excess, z = _excess([p - floor.staging_ms - (b - floor.staging_ms) / m * n
                             for p, b, n, m in zip(sub.prepare_rt, base.prepare_rt, sub.calls,
                                                   base.calls)], [0.0] * len(sub.prepare_rt))
        result = replace(result, prepare_excess_ms=excess / calls,
                         charged_prepare=z > SIGNIFICANCE and excess > allowance)
    # CPU time over each turn (read while the run is frozen, so exact) beyond the clock's view of
    # it: a thread that worked on after the reply left
    if len(sub.cpu) == len(sub.time_rt) > 0 and len(base.cpu) == len(base.time_rt) > 0:
        excess, z = _cpu_excess(sub, base)
        result = replace(result, cpu_excess_ms=excess / calls,
                         charged_cpu=z > SIGNIFICANCE and excess > ALLOWANCE_MS)
    return result


class GpuThrottled(Exception):
    """The GPU's clock was throttled in nearly every timed call: no time to score (the judge's
    problem: a hot or power-capped card)."""


# (role, op, turn=False, **fields) -> reply, failures raise; `turn`: the contender, frozen, is
# thawed for this request alone (SandboxProcess.send)
Request = Callable[..., dict]
Freeze = Callable[[str, bool], object]  # (role, frozen): stop or resume that contender


def cpu_pool() -> tuple[ThreadPoolExecutor, int]:
    """Threads of the judge, one per CPU, and how many, for work done while both contenders
    wait: a round's draws of large sets (torch releases the GIL in its generators; each thread
    has a generator of its own, seeded for each set), the kept calls' checks. This process's
    own (a pool made before a fork has no threads in the child)."""
    return _cpu_pool_of(os.getpid())


@functools.cache
def _cpu_pool_of(pid: int) -> tuple[ThreadPoolExecutor, int]:
    threads = len(os.sched_getaffinity(0))
    return ThreadPoolExecutor(threads, f"kjudge-cpu-{pid}"), threads


class FreshRounds:
    """The rounds of one test point: fresh inputs for every call of the round's batches and
    poisoned outputs before each round, outputs read after each contender's turn, and a
    uniformly random subset of `keep[role]` calls of each contender kept, and every call whose
    outputs look skipped at a sample of their elements (`looks_skipped`), up to MAX_SUSPECTS.

    `draw(index, slot)` draws the inputs of call `slot` of round `index` (in the judge's memory,
    which no contender maps) and `write(drawn)` writes a round's, a set per call, where both
    contenders read them (on `cpus`, the contenders' CPUs, where given); `outputs[role]` is that contender's
    output tensors, a set per call of a batch, shared with it (judge/judging/shared.py); kept
    outputs are written to `kept_dir`, which no sandbox mounts.

    A round's inputs are drawn when it begins, while both contenders are frozen, never during
    a timed turn: drawn meanwhile on the judge's own CPU, they slowed this VM's turns (its two
    vCPUs share more than they show) and the paired ratio of one round's two batches varied by
    10-130 % instead of 2-7 %, so that every point ran to its time cap (BENCHMARKS.md, "Drawing
    during the turns"). With the contenders frozen every CPU is free: the calls' sets are drawn
    on all of them at once (drawing is most of a round's cost for large inputs, ~4 ms per
    million normal floats here). No contender sees a round's inputs before it begins.
    """

    def __init__(self, draw: Callable[[int, int], object], write: Callable[[list], None],
                 outputs: dict[str, SharedTensors], kept_dir: Path, keep: dict[str, int],
                 cpus: set[int] | None = None, set_bytes: int = 0):
        self.draw = draw
        self.set_bytes = set_bytes  # of a call's inputs
        self.write = write  # all the sets of a round, in call order
        self.cpus = cpus  # where the writes are made (see on_cpus)
        self.outputs = outputs
        self.kept_dir = kept_dir
        self.rounds = 0
        self.calls = 0  # sets of the current round
        self.seen = dict.fromkeys(outputs, 0)  # calls of each contender so far
        self.slots: dict[str, dict[int, tuple[int, int]]] = {r: {} for r in outputs}
        # seeded from the OS: no run sees a draw, and a run cannot read the judge's memory (the
        # OS's generator for each of a tiny point's ~70,000 picks a judging cost 0.25 s)
        seed = random.SystemRandom()
        generator = random.Random(seed.getrandbits(128))
        self._reservoirs = {role: Reservoir(keep[role], generator) for role in outputs}
        # the kept calls' outputs, by place in the reservoir: small ones held here until `kept`
        # (a file written per pick cost a tiny point ~0.2 ms each, thousands a judging)
        self._held: dict[str, dict[int, bytes]] = {r: {} for r in outputs}
        self._sampler = torch.Generator().manual_seed(seed.getrandbits(63))
        self.suspects: dict[str, list[tuple[int, int]]] = {r: [] for r in outputs}
        # where the next turn's outputs are sampled (drawn after the turn before), and what the
        # last call of that turn left there
        self._positions = {r: o.positions(SKIP_SAMPLES, self._sampler) for r, o in outputs.items()}
        self._before: dict[str, list[torch.Tensor] | None] = dict.fromkeys(outputs)
        for role in outputs:
            (kept_dir / role).mkdir(parents=True, exist_ok=True)

    def begin(self, calls: int = 1) -> None:
        """Start a round of batches of up to `calls` calls (both contenders frozen)."""
        index, self.rounds, self.calls = self.rounds, self.rounds + 1, calls
        drawers, threads = cpu_pool()
        # a part per thread where a set's drawing releases the GIL long enough to pay for it
        # (a task costs ~50 us; a thousand tiny sets drew no faster on two threads than on one)
        parts = min(calls, threads if self.set_bytes >= PARALLEL_DRAW_BYTES else 1)
        bounds = [calls * part // parts for part in range(parts + 1)]
        drawn = [values for part in (drawers.map if parts > 1 else map)(
            lambda b: [self.draw(index, slot) for slot in range(*b)], zip(bounds, bounds[1:]))
            for values in part]
        with on_cpus(self.cpus):
            self.write(drawn)
            for shared in self.outputs.values():
                shared.poison(calls)

    def end(self, role: str, calls: int = 1) -> None:
        """After `role`'s turn of `calls` calls (frozen again): keep what it wrote in the calls
        the reservoir keeps."""
        index, calls = self.rounds - 1, min(calls, self.calls)
        shared = self.outputs[role]
        for slot, place in self._reservoirs[role].picks(calls):
            self.slots[role][place] = (index, slot)
            if shared.size <= HELD_BYTES:
                self._held[role][place] = shared.snapshot(slot)
            else:
                self._held[role].pop(place, None)
                (self.kept_dir / role / f"{place}.raw").write_bytes(shared.snapshot(slot))
        self.seen[role] += calls
        self._keep_suspects(role, index, calls)

    def _keep_suspects(self, role: str, index: int, calls: int) -> None:
        """Keep the calls of this turn whose outputs look skipped (see `looks_skipped`)."""
        shared, suspects = self.outputs[role], self.suspects[role]
        positions = self._positions[role]
        skipped = looks_skipped(shared.sample(calls, positions),
                                shared.sample(calls, positions, poisoned=True), self._before[role])
        for slot in skipped.nonzero().flatten().tolist()[:MAX_SUSPECTS - len(suspects)]:
            suspects.append((index, slot))
            (self.kept_dir / role / f"suspect{len(suspects)}.raw").write_bytes(
                shared.snapshot(slot))
        self._positions[role] = shared.positions(SKIP_SAMPLES, self._sampler)
        self._before[role] = [rows[-1] for rows in shared.sample(calls, self._positions[role])]

    def kept(self, role: str) -> list[tuple[int, int, Path]]:
        """(round index, call in the round, output file) of every kept call, in call order:
        the reservoir's and the suspects'."""
        for place, held in self._held[role].items():
            (self.kept_dir / role / f"{place}.raw").write_bytes(held)
        self._held[role].clear()
        kept = {(index, slot): self.kept_dir / role / f"{place}.raw"
                for place, (index, slot) in self.slots[role].items()}
        for number, call in enumerate(self.suspects[role], 1):
            kept.setdefault(call, self.kept_dir / role / f"suspect{number}.raw")
        return sorted((index, slot, path) for (index, slot), path in kept.items())


class Reservoir:
    """A uniformly random draw of `size` items from a stream whose length is known only at its
    end (Li's Algorithm L: the index of the next item that replaces one is drawn directly, so
    that skipped items cost nothing: a tiny point's ~100,000 calls make ~1,500 picks)."""

    def __init__(self, size: int, generator: random.Random):
        self.size, self.generator = size, generator
        self.seen = 0
        self._weight, self._next = 1.0, size - 1
        self._advance()

    def picks(self, count: int) -> list[tuple[int, int]]:
        """Of the next `count` items, those kept: (offset among them, place in the draw), in
        stream order (a place picked twice holds the later item)."""
        start, end = self.seen, self.seen + count
        kept = [(i - start, i) for i in range(start, min(end, self.size))]
        while self._next < end:
            kept.append((self._next - start, self.generator.randrange(self.size)))
            self._advance()
        self.seen = end
        return kept

    def _advance(self) -> None:
        if self.size <= 0:
            self._next = math.inf
            return
        self._weight *= math.exp(math.log(self._uniform()) / self.size)
        skip = (math.floor(math.log(self._uniform()) / math.log1p(-self._weight))
                if self._weight < 1 else 0)
        self._next += skip + 1

    def _uniform(self) -> float:
        """In (0, 1): both ends would break the logarithms."""
        return (self.generator.getrandbits(53) + 0.5) / (1 << 53)


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
# A point stopped by its own time cap (scoring.point_time_cap, below the problem's max_s) has at
# least this many scored rounds: the pairs the stop rule itself looks at (MIN_STOP_SAMPLES)
CAPPED_MIN_ROUNDS = 2 * scoring.MIN_STOP_SAMPLES


def interleave(request: Request, freeze: Freeze, timing: Timing, rounds: FreshRounds,
               flush: Callable[[], None] | None = None,
               cpu_ns: Callable[[str], int | None] | None = None,
               floor_loader: str | None = None, audit: bool = False,
               throttled: Callable[[], bool] | None = None,
               max_calls: int = 1,
               share: Callable[[dict[str, float]], float] | None = None,
               weight: Callable[[dict[str, float]], float] | None = None) -> dict[str, Samples]:
    """Alternate turns between the two contenders, each first in half the rounds (`_order`),
    until their paired ratio reaches the target relative standard error (or a cap is hit); the
    one whose turn it is not is frozen. A turn is a batch of up to `max_calls` calls, grown
    until it lasts BATCH_MS on the judge's clock (a round with a shorter batch is not scored).
    In the first rounds the baseline's harness also times what the requests carry besides the
    calls (floor turns, see FLOOR_TURNS; `floor_loader`: how the submission's run_kernel is
    called). With `flush` (the CPU device) the judge flushes the cache before a turn and a turn
    is one `time` request; without, the harness flushes in a `prepare` request (GPUs).
    With `cpu_ns` (a contender's CPU time so far, read while it is frozen) each turn's CPU time
    is recorded too. With `audit`, some rounds are audits (AUDIT_EVERY): not in the samples.
    With `throttled` (asked right after each turn: was the GPU's clock throttled?) a round with
    a throttled turn is left out and another one run; a GPU that throttles every call is
    GpuThrottled once the time cap is four times over. With `share` (what the point weighs in
    the score, from each contender's time per call so far: scoring.point_share) the target is
    the point's own (scoring.point_target), and with `weight` (what it weighs against the point
    timed first, from the same times: scoring.point_weight) so is the time cap
    (scoring.point_time_cap; a point it stops has CAPPED_MIN_ROUNDS rounds at least; the
    problem's max_s stops any after three)."""
    run = _Interleaving(request, freeze, timing, rounds, flush, cpu_ns, floor_loader, audit,
                        throttled, max_calls, share, weight)
    for role in run.roles:
        freeze(role, True)
    run.started = time.monotonic()
    switch = sys.getswitchinterval()
    # another thread of this process (a worker's heartbeat, the API where the worker is
    # embedded) may hold the GIL when a reply wakes the judge: it must not wait up to the
    # default 5 ms, which its clock would charge to that turn
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        run.floor_turn()  # the round trip is known before the first batch is sized
        while True:
            run.round()
            if run.finished():
                return run.samples
    finally:
        sys.setswitchinterval(switch)
        for role in run.roles:
            freeze(role, False)


@dataclass
class _Interleaving:
    """`interleave`'s state: the samples so far, each contender's batch size, the clock."""

    request: Request
    freeze: Freeze
    timing: Timing
    rounds: FreshRounds
    flush: Callable[[], None] | None
    cpu_ns: Callable[[str], int | None] | None
    floor_loader: str | None
    audit: bool
    throttled: Callable[[], bool] | None
    max_calls: int
    share: Callable[[dict[str, float]], float] | None
    weight: Callable[[dict[str, float]], float] | None
    samples: dict[str, Samples] = field(
        default_factory=lambda: {"submission": Samples(), "baseline": Samples()})
    started: float = field(default_factory=time.monotonic)
    draw: random.SystemRandom = field(default_factory=random.SystemRandom)

    def __post_init__(self) -> None:
        self.roles = list(self.samples)
        self.batch = dict.fromkeys(self.roles, 1)

    def floor_turn(self) -> None:
        """In the baseline's harness: a request with no call, then a batch of empty calls."""
        base = self.samples["baseline"]
        for calls, empty in ((0, None), (self.max_calls, self.floor_loader))[
                :2 if self.floor_loader else 1]:
            if self.flush is not None:
                self.flush()
            got = Samples()
            _turn(self.request, self.freeze, "baseline", got, prepare=self.flush is None,
                  calls=calls, empty=empty)
            self.freeze("baseline", True)
            if calls == 0:
                base.request_rt += got.time_rt
                base.staging_rt += got.prepare_rt
            else:
                base.floor += got.reported
                base.empty_rt += got.time_rt
                base.empty_calls.append(calls)

    def round(self) -> None:
        """One turn of each contender, in this round's order; its samples kept unless it was an
        audit, a turn was throttled or a batch was too short for the clock."""
        samples, base = self.samples, self.samples["baseline"]
        self.rounds.begin(max(self.batch.values()))
        self.roles = _order(samples["submission"].first)
        audited = self.audit and self.draw.randrange(AUDIT_EVERY) == 0
        turns, hot, short = {role: Samples() for role in self.roles}, False, False
        request_ms = statistics.median(base.request_rt)
        for role in self.roles:
            turns[role].first.append(role == self.roles[0])
            hot = self._turn(role, turns[role], audited, ask_throttled=not hot) or hot
            short = self._resize(role, turns[role].time_rt[0] - request_ms) or short
        if hot:
            samples["submission"].throttled += 1
        elif not (short or audited):  # an audit's samples, and a throttled round's, are left out
            for role in self.roles:
                samples[role].extend(turns[role])
        if len(base.request_rt) < FLOOR_TURNS:
            self.floor_turn()

    def _turn(self, role: str, got: Samples, audited: bool, ask_throttled: bool) -> bool:
        """One contender's turn (its CPU time too, where metered); whether the GPU throttled
        (asked only while no turn of the round has said so)."""
        if self.flush is not None:
            self.flush()
        before = self.cpu_ns(role) if self.cpu_ns else None
        _turn(self.request, self.freeze, role, got, prepare=self.flush is None,
              calls=self.batch[role], record=audited and role == "submission")
        hot = bool(ask_throttled and self.throttled and self.throttled())
        self.freeze(role, True)
        after = self.cpu_ns(role) if self.cpu_ns else None
        if before is not None and after is not None:
            got.cpu.append((after - before) / 1e6)
        self.rounds.end(role, self.batch[role])
        return hot

    def _resize(self, role: str, span: float) -> bool:
        """A batch too short for the clock: longer from the next round on (at most 16 times: a
        span lost in the request's noise says little). Whether it was too short."""
        batch = self.batch[role]
        if span >= BATCH_MS or batch >= self.max_calls:
            return False
        self.batch[role] = min(self.max_calls, 16 * batch,
                               math.ceil(batch * 1.25 * BATCH_MS / max(span, 1e-3)))
        return True

    def finished(self) -> bool:
        """Enough rounds: the count or time caps, or the paired ratio converged on its target;
        GpuThrottled when a GPU throttles every call."""
        samples, timing = self.samples, self.timing
        sub = samples["submission"]
        n, elapsed = len(sub.reported), time.monotonic() - self.started
        if n < 3 and sub.throttled and elapsed > 4 * timing.max_s:
            raise GpuThrottled(f"{sub.throttled} of {self.rounds.rounds} timed "
                               "rounds ran on a throttled GPU clock")
        target = point_target(samples, self.share, timing)
        cap = point_time_cap(samples, self.weight, timing)
        if (n >= timing.max_reps or (n >= 3 and elapsed > timing.max_s)
                or (n >= max(timing.min_reps, CAPPED_MIN_ROUNDS) and elapsed > cap)):
            return True
        return n >= timing.min_reps and scoring.converged(
            paired_ratios(sub, samples["baseline"]), target, math.ceil(timing.min_reps / 2))


def per_call_ms(got: Samples) -> float:
    """A contender's median time per call on the judge's clock, round trip included (0: none)."""
    return statistics.median(rt / n for rt, n in zip(got.time_rt, got.calls)) if got.calls else 0.0


def point_target(samples: dict[str, Samples], share: Callable[[dict[str, float]], float] | None,
                 timing: Timing) -> float:
    """The relative standard error this point's paired ratio needs (see interleave)."""
    if share is None:
        return timing.target_rse
    return scoring.point_target(timing.target_rse, share(
        {role: per_call_ms(got) for role, got in samples.items()}))


def point_time_cap(samples: dict[str, Samples],
                   weight: Callable[[dict[str, float]], float] | None, timing: Timing) -> float:
    """This point's time cap (see interleave)."""
    if weight is None:
        return timing.max_s
    return scoring.point_time_cap(timing.max_s, weight(
        {role: per_call_ms(got) for role, got in samples.items()}))


def _order(sub_first: list[bool]) -> list[str]:
    """The next round's order: the place the submission has had less often among the rounds
    scored so far (at random when even), so that each contender is first in half the rounds, give
    or take one, and `balanced_median` and `paired_ratios` can cancel what the place costs."""
    ahead = 2 * sum(sub_first) - len(sub_first)
    if ahead == 0:
        return random.sample(["submission", "baseline"], 2)
    return ["baseline", "submission"] if ahead > 0 else ["submission", "baseline"]


def paired_ratios(sub: Samples, base: Samples) -> list[float]:
    """The two contenders' time per call on the clock, one over the other, per pair of rounds
    with the submission first in one and second in the other (the geometric mean of the two
    rounds' ratios): a host that slows down for a while slows both turns of a round (this VM's
    batches vary by ±20 % from round to round, their ratio by a few percent), and the pair
    cancels the place's own cost (several %: `balanced_median`), so the ratio settles first."""
    ratios = [((s / n) / (b / m), first) for s, n, b, m, first in zip(
        sub.time_rt, sub.calls, base.time_rt, base.calls, sub.first) if b > 0 and s > 0]
    ahead = [r for r, first in ratios if first]
    behind = [r for r, first in ratios if not first]
    if len(sub.first) != len(sub.time_rt):  # no places recorded: round by round
        return [r for r, _ in ratios]
    return [math.sqrt(a * b) for a, b in zip(ahead, behind)]


def _turn(request: Request, freeze: Freeze, role: str, got: Samples, prepare: bool,
          calls: int = 1, record: bool = False, empty: str | None = None) -> None:
    """One contender's timed batch of `calls` calls, the contender thawed for it (the caller
    freezes it again). With `prepare` (GPUs): `prepare` copies the inputs in and flushes,
    `time` is the calls alone, `collect` copies the outputs out; the copies' requests are
    timed together and compared with the baseline's, the calls' request is the time. Without
    (the CPU device) the turn is the `time` request alone: the run is thawed once it is
    written and frozen as soon as it replies (SandboxProcess.send), so that a thread the run
    left working gets no time outside the judge's clock but the kernel's delay in freezing."""
    fields = {"fresh": True, "calls": calls, **({"record": True} if record else {}),
              **({"empty": empty} if empty else {})}
    staged = 0.0
    if prepare:
        freeze(role, False)
        sent = time.perf_counter()
        request(role, "prepare", fresh=True, calls=calls)
        staged += time.perf_counter() - sent
    sent = time.perf_counter()
    reply = request(role, "time", turn=not prepare, **fields)
    got.time_rt.append((time.perf_counter() - sent) * 1000)
    got.reported.append(reply["ms"])
    got.calls.append(calls)
    if prepare:
        sent = time.perf_counter()
        request(role, "collect")
        staged += time.perf_counter() - sent
        got.prepare_rt.append(staged * 1000)
