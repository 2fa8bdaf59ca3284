"""The fresh inputs and kept calls of a point's timed rounds: every call's inputs drawn from a seed
of its own and written while both contenders are frozen, the uniform draw of calls to check
(reservoir sampling), the calls whose outputs look skipped, and the CPUs the judge works on.
Trusted side (judge/measure/rounds.py runs the rounds)."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import random
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from judge.measure.shared import SharedTensors

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
    which no contender maps) and `write(drawn)` writes a round's, a set per call, into the
    judge's staging (on `cpus`, the contenders' CPUs, where given), from which `seal(calls)`
    seals each call's set into a file of its own (`sealed`: their descriptors, released to each
    contender a call at a time: judge/measure/release.py); `outputs[role]` is that contender's
    output tensors, a set per call of a batch, shared with it (judge/measure/shared.py); kept
    outputs are written to `kept_dir`, which no sandbox mounts.

    A round's inputs are drawn when it begins, while both contenders are frozen, never during
    a timed turn: drawn meanwhile on the judge's own CPU, they slowed a 2-core host's turns (its
    two vCPUs share more than they show) and the paired ratio of one round's two batches varied by
    10-130 % instead of 2-7 %, so that every point ran to its time cap (BENCHMARKS.md, "Drawing
    during the turns"). With the contenders frozen every CPU is free: the calls' sets are drawn
    on all of them at once (drawing is most of a round's cost for large inputs, ~4 ms per
    million normal floats here). No contender sees a round's inputs before it begins.
    """

    def __init__(self, draw: Callable[[int, int], object], write: Callable[[list], None],
                 outputs: dict[str, SharedTensors], kept_dir: Path, keep: dict[str, int],
                 cpus: set[int] | None = None, set_bytes: int = 0,
                 seal: Callable[..., list[int]] | None = None):
        self.draw = draw
        self.seal = seal
        self.sealed: list[int] = []  # this round's sets, a sealed file per call (see `seal`)
        # the round before's, held one round more: a contender's mapping of one is then never
        # the last, and the release that replaces it in a call does not free its pages there
        self._held_sealed: list[int] = []
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
        _close_all(self._held_sealed)
        self._held_sealed, self.sealed = self.sealed, []
        with on_cpus(self.cpus):
            self.write(drawn)
            if self.seal is not None:
                self.sealed = self.seal(calls)
            for shared in self.outputs.values():
                shared.poison(calls)

    def prime(self, calls: int) -> None:
        """At least `calls` sealed sets, those beyond the round's as the staging holds them
        (before the first round: zeros): what the floor turns' empty calls are released."""
        if self.seal is not None and len(self.sealed) < calls:
            with on_cpus(self.cpus):
                self.sealed += self.seal(calls, len(self.sealed))

    def close(self) -> None:
        """Close the sealed files (the contenders keep what they were sent)."""
        _close_all(self._held_sealed)
        _close_all(self.sealed)
        self._held_sealed, self.sealed = [], []

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


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


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
