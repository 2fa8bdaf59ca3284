"""Timing one test point: the submission and the baseline alternate, and the time that scores.
The rounds run here; what they measured and what it is charged is charging.py's, each call's
fresh inputs and the calls kept for checking fresh_rounds.py's.

Trusted side. A round gives each contender one timed turn (each first in half the rounds): a
batch of consecutive calls of `run_kernel`, each on its own fresh inputs. On the CPU device the judge
flushes the cache from a process of its own (judge/measure/flusher.py) and sends one `time`
request; on a GPU the harness gets a `prepare` request first (copy the batch's inputs to the
device, poison the outputs there, flush the L2), then `time` (the calls alone), then `collect`
(copy the outputs back to the file the judge maps): the copies, whose time varies with the
process (pageable pages, placement), stay out of the request the calls are judged by, and are
compared with the baseline's own (the same bytes per call, from pinned mappings where CUDA allows).

Fresh inputs for every call: each call's inputs are drawn from a seed of its own and written, with
the outputs poisoned, into files both sides map (judge/measure/shared.py) while both contenders
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

import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from judge.harness.protocol import slot_stride, unpack_reports
from judge.measure import scoring
from judge.measure.charging import Samples, paired_ratios, per_call_ms
from judge.measure.fresh_rounds import FreshRounds
from judge.problem.schema import Timing

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


class BadReply(Exception):
    """A contender's reply to a timed request that does not say what it must (every call's
    report): a run that tampered with its harness's replies."""

    def __init__(self, role: str, message: str):
        super().__init__(message)
        self.role = role


class GpuThrottled(Exception):
    """The GPU's clock was throttled in nearly every timed call: no time to score (the judge's
    problem: a hot or power-capped card)."""


# (role, op, turn=False, **fields) -> reply, failures raise; `turn`: the contender, frozen, is
# thawed for this request alone (SandboxProcess.send)
Request = Callable[..., dict]


Freeze = Callable[[str, bool], object]  # (role, frozen): stop or resume that contender


# A GPU keeps running what a run launched past its turn's last synchronize (a thread that
# launches after it, a context of its own through the driver API, a child process): freezing the
# run stops its threads, not the device. Before each of its turns the baseline's harness (no
# contestant code) runs a one-element probe kernel: one that waits longer than an idle device
# lets it (calibrated, Device.await_idle) finds the device busy with the submission's work, and
# the round is left out (the baseline's turn would run slowed by it), counted and the device
# awaited (PROBE_WAIT of the run's time limit at most); a submission that does so is held for
# review (stages/score.py), and one that does it in every round ends as TLE (DeviceKeptBusy).
# The CPU device needs none: the run's threads are frozen there and its CPU time counted.
PROBE_WAIT = 0.5


class DeviceKeptBusy(Exception):
    """The device was still running the submission's work before nearly every baseline turn."""


# Where the problem limits the submission's operators, one round in AUDIT_EVERY (drawn at random,
# unseen by the run until its call) is an audit: the submission's timed call runs with the
# operators recorded, and that round's samples of both contenders are left out of the timing.
# Its other timed calls are not recorded (a dispatch mode costs every ATen call Python time that
# the baseline does not pay), and a run that counts its calls cannot know which are audited.
AUDIT_EVERY = 8


# A point stopped by its own time cap (scoring.point_time_cap, below the problem's max_s) has at
# least this many scored rounds: the pairs the stop rule itself looks at (MIN_STOP_SAMPLES)
CAPPED_MIN_ROUNDS = 2 * scoring.MIN_STOP_SAMPLES


@dataclass(frozen=True)
class Plan:
    """What timing one test point takes (`interleave`):
    - `request`, `freeze`: the contenders (see Request, Freeze); `timing`: the problem's;
    - `rounds`: each call's fresh inputs and the calls kept for checking (fresh_rounds.py);
    - `loaders`: each contender's loader ("native", "python"): the baseline's harness measures,
      in floor turns (FLOOR_TURNS), what a request carries besides the calls for each;
    - `flush` (the CPU device): the judge flushes the cache between `prepare` and `time`, and
      each request thaws the run alone; without, the harness flushes in `prepare` (GPUs);
    - `cpu_ns`: a contender's CPU time so far, read while it is frozen: each turn's recorded;
    - `audit`: some rounds are audits (AUDIT_EVERY), not in the samples;
    - `throttled`: asked right after each turn (was the GPU's clock throttled?): a round with a
      throttled turn is left out and another run; a GPU that throttles every call is
      GpuThrottled once the time cap is four times over;
    - `max_calls`: the most calls a batch holds (batch_slots);
    - `share`: what the point weighs in the score, from each contender's time per call so far
      (scoring.point_share): the target is the point's own (`target`); `weight`: what it weighs
      against the point timed first (scoring.point_weight): so is the time cap (`time_cap`; a
      point it stops has CAPPED_MIN_ROUNDS rounds at least; the problem's max_s stops any after
      three);
    - `probe_wait_s` (GPUs): the baseline's harness probes the device before each of its turns
      (PROBE_WAIT): a round whose device still ran another process's work is left out;
    - `release(role, calls, first)`: release that contender's inputs of the round's first
      `calls` calls: the first call's before the turn's requests (`first`), the others during
      its `time` request, each once the call before it is done (release.py), returning then
      the judge's own time releasing them, in ms (Samples.judged);
    - `after_turn(role)`: after each of a contender's turns, it frozen: a check of the run's
      (which ends the timing by raising), and whether it was seen to map whole every set
      released to it in the turn (release.look_at_run); a turn it was not counts in its
      Samples.unmapped, and its floor then credits no mapping and leaves the point
      unresolvable (charging.Floor)."""

    request: Request
    freeze: Freeze
    timing: Timing
    rounds: FreshRounds
    loaders: dict[str, str] = field(default_factory=dict)
    flush: Callable[[], None] | None = None
    cpu_ns: Callable[[str], int | None] | None = None
    audit: bool = False
    throttled: Callable[[], bool] | None = None
    max_calls: int = 1
    share: Callable[[dict[str, float]], float] | None = None
    weight: Callable[[dict[str, float]], float] | None = None
    probe_wait_s: float | None = None
    release: Callable[[str, int, bool], float | None] | None = None
    after_turn: Callable[[str], bool] | None = None

    def target(self, samples: dict[str, Samples]) -> float:
        """The relative standard error this point's paired ratio needs."""
        if self.share is None:
            return self.timing.target_rse
        return scoring.point_target(self.timing.target_rse, self.share(_per_call(samples)))

    def time_cap(self, samples: dict[str, Samples]) -> float:
        """This point's time cap."""
        if self.weight is None:
            return self.timing.max_s
        return scoring.point_time_cap(self.timing.max_s, self.weight(_per_call(samples)))


def _per_call(samples: dict[str, Samples]) -> dict[str, float]:
    return {role: per_call_ms(got) for role, got in samples.items()}


def interleave(plan: Plan) -> dict[str, Samples]:
    """Alternate turns between the two contenders, each first in half the rounds (`_order`),
    until their paired ratio reaches the plan's target relative standard error (or a cap is
    hit); the one whose turn it is not is frozen. A turn is a batch of up to `max_calls` calls,
    grown until it lasts BATCH_MS on the judge's clock (a round with a shorter batch is not
    scored). See Plan for what each of its parts does."""
    run = _Interleaving(plan)
    for role in run.roles:
        plan.freeze(role, True)
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
            plan.freeze(role, False)


@dataclass
class _Interleaving:
    """`interleave`'s state: the samples so far, each contender's batch size, the clock."""

    plan: Plan
    samples: dict[str, Samples] = field(
        default_factory=lambda: {"submission": Samples(), "baseline": Samples()})
    started: float = field(default_factory=time.monotonic)
    draw: random.SystemRandom = field(default_factory=random.SystemRandom)

    def __post_init__(self) -> None:
        self.roles = list(self.samples)
        self.batch = dict.fromkeys(self.roles, 1)
        self.floor_loaders = tuple(dict.fromkeys(self.plan.loaders.values()))

    def floor_turn(self) -> None:
        """In the baseline's harness: a request with no call, then for each loader a batch of
        empty calls."""
        base = self.samples["baseline"]
        self.plan.rounds.prime(self.plan.max_calls)
        for calls, empty in ((0, None), *((self.plan.max_calls, loader)
                                          for loader in self.floor_loaders)):
            got = Samples()
            reply = _turn(self.plan, "baseline", got, calls=calls, empty=empty)
            self.plan.freeze("baseline", True)
            if empty is None:
                base.request_rt += got.time_rt
                base.request_handled.append(float(reply.get("handled_ms", 0.0)))
                base.staging_rt += got.prepare_rt
            else:
                base.floor.setdefault(empty, []).extend(got.reported)
                base.empty_rt.setdefault(empty, []).extend(got.time_rt)
                base.empty_judged.setdefault(empty, []).extend(got.judged)
                base.empty_calls.setdefault(empty, []).append(calls)
                base.empty_mapped.setdefault(empty, []).append(float(reply.get("mapped_ms", 0.0)))

    def round(self) -> None:
        """One turn of each contender, in this round's order; its samples kept unless it was an
        audit, a turn was throttled or a batch was too short for the clock."""
        samples, base = self.samples, self.samples["baseline"]
        self.plan.rounds.begin(max(self.batch.values()))
        self.roles = _order(samples["submission"].first)
        audited = self.plan.audit and self.draw.randrange(AUDIT_EVERY) == 0
        turns, hot, short, busy = {role: Samples() for role in self.roles}, False, False, False
        request_ms = statistics.median(base.request_rt)
        for role in self.roles:
            turns[role].first.append(role == self.roles[0])
            if role == "baseline":
                busy = self._device_busy()
            hot = self._turn(role, turns[role], audited, ask_throttled=not hot) or hot
            short = self._resize(role, turns[role].time_rt[0] - request_ms) or short
        if busy:
            samples["submission"].busy += 1
        elif hot:
            samples["submission"].throttled += 1
        elif not (short or audited):  # an audit's samples, and a throttled round's, are left out
            for role in self.roles:
                samples[role].extend(turns[role])
        if len(base.request_rt) < FLOOR_TURNS:
            self.floor_turn()

    def _device_busy(self) -> bool:
        """Before the baseline's turn (GPUs): whether its harness found the device running
        work it did not launch (PROBE_WAIT), having waited for it to idle."""
        if self.plan.probe_wait_s is None:
            return False
        self.plan.freeze("baseline", False)
        reply = self.plan.request("baseline", "probe", wait_s=self.plan.probe_wait_s)
        busy = float(reply.get("busy_ms", 0.0))
        if busy > 0:
            self.samples["submission"].busy_ms.append(busy)
        return busy > 0

    def _turn(self, role: str, got: Samples, audited: bool, ask_throttled: bool) -> bool:
        """One contender's turn (its CPU time too, where metered); whether the GPU throttled
        (asked only while no turn of the round has said so)."""
        cpu_ns = self.plan.cpu_ns
        before = cpu_ns(role) if cpu_ns else None
        _turn(self.plan, role, got, calls=self.batch[role],
              record=audited and role == "submission")
        throttled = self.plan.throttled
        hot = bool(ask_throttled and throttled and throttled())
        self.plan.freeze(role, True)
        after = cpu_ns(role) if cpu_ns else None
        if self.plan.after_turn is not None and not self.plan.after_turn(role):
            self.samples[role].unmapped += 1
        if before is not None and after is not None:
            got.cpu.append((after - before) / 1e6)
        self.plan.rounds.end(role, self.batch[role])
        return hot

    def _resize(self, role: str, span: float) -> bool:
        """A batch too short for the clock: longer from the next round on (at most 16 times: a
        span lost in the request's noise says little). Whether it was too short."""
        batch = self.batch[role]
        if span >= BATCH_MS or batch >= self.plan.max_calls:
            return False
        self.batch[role] = min(self.plan.max_calls, 16 * batch,
                               math.ceil(batch * 1.25 * BATCH_MS / max(span, 1e-3)))
        return True

    def finished(self) -> bool:
        """Enough rounds: the count or time caps, or the paired ratio converged on its target;
        GpuThrottled when a GPU throttles every call."""
        samples, timing = self.samples, self.plan.timing
        sub = samples["submission"]
        n, elapsed = len(sub.reported), time.monotonic() - self.started
        if n < 3 and sub.busy and elapsed > 4 * timing.max_s:
            raise DeviceKeptBusy(f"the device still ran the submission's work before {sub.busy} "
                                 f"of {self.plan.rounds.rounds} of the baseline's turns")
        if n < 3 and sub.throttled and elapsed > 4 * timing.max_s:
            raise GpuThrottled(f"{sub.throttled} of {self.plan.rounds.rounds} timed "
                               "rounds ran on a throttled GPU clock")
        target, cap = self.plan.target(samples), self.plan.time_cap(samples)
        if (n >= timing.max_reps or (n >= 3 and elapsed > timing.max_s)
                or (n >= max(timing.min_reps, CAPPED_MIN_ROUNDS) and elapsed > cap)):
            return True
        return n >= timing.min_reps and scoring.converged(
            paired_ratios(sub, samples["baseline"]), target, math.ceil(timing.min_reps / 2))


def _order(sub_first: list[bool]) -> list[str]:
    """The next round's order: the place the submission has had less often among the rounds
    scored so far (at random when even), so that each contender is first in half the rounds, give
    or take one, and `balanced_median` and `paired_ratios` can cancel what the place costs."""
    ahead = 2 * sum(sub_first) - len(sub_first)
    if ahead == 0:
        return random.sample(["submission", "baseline"], 2)
    return ["baseline", "submission"] if ahead > 0 else ["submission", "baseline"]


def _turn(plan: Plan, role: str, got: Samples, calls: int = 1, record: bool = False,
          empty: str | None = None) -> dict:
    """One contender's timed batch of `calls` calls. `prepare` readies it (binds the calls'
    arguments; on a GPU copies the inputs in and flushes), `time` is the calls alone, and on a
    GPU `collect` copies the outputs out; on a GPU the copies' requests are timed together and
    compared with the baseline's. With `flush` (the CPU device) the judge flushes the cache
    between `prepare` and `time`, and each request thaws the run for itself alone
    (SandboxProcess.send: frozen as soon as it replies), so that a thread the run left working
    gets no time outside the judge's clock but the kernel's delay in freezing; on a GPU the run
    is thawed for the turn (the caller freezes it again). The calls' inputs are released during
    `time`, a call at a time (Plan.release). Returns the `time` reply."""
    request, freeze, flush = plan.request, plan.freeze, plan.flush
    fields = {"fresh": True, "calls": calls, **({"record": True} if record else {}),
              **({"empty": empty} if empty else {})}
    on_cpu = flush is not None
    release, judged = plan.release if calls else None, []
    during = ({"during": lambda: judged.append(release(role, calls, False) or 0.0)}
              if release is not None else {})
    if release is not None:
        release(role, calls, True)  # the first call's set, taken while the turn is prepared
    if not on_cpu:
        freeze(role, False)
    sent = time.perf_counter()
    request(role, "prepare", turn=on_cpu, **fields)
    staged = time.perf_counter() - sent
    if on_cpu:
        flush()
    sent = time.perf_counter()
    reply = request(role, "time", turn=on_cpu, calls=calls, **during)
    got.time_rt.append((time.perf_counter() - sent) * 1000)
    got.judged.append(judged[0] if judged else 0.0)
    reports = _reports(role, reply, calls)
    got.reported.append(statistics.median(reports) if reports else 0.0)
    got.each_call.append(reports)
    got.calls.append(calls)
    if not on_cpu:
        sent = time.perf_counter()
        request(role, "collect")
        staged += time.perf_counter() - sent
        got.prepare_rt.append(staged * 1000)
    return reply


def _reports(role: str, reply: dict, calls: int) -> list[float]:
    """Every call's reported time from a `time` reply (BadReply: not one finite, non-negative
    time per call)."""
    try:
        reports = unpack_reports(reply["reports"])
    except (KeyError, TypeError, ValueError):
        raise BadReply(role, "the reply to a timed request did not report each call") from None
    if len(reports) != calls or not all(0.0 <= r < math.inf for r in reports):
        raise BadReply(role, f"the reply to a timed batch of {calls} calls reported "
                             f"{len(reports)} times, not each call's")
    return reports
