"""What a timed point measured and what it is charged: each contender's samples (the judge's clock,
the harness's report, CPU time, the floor turns'), the empty call's floor, the paired ratios,
and the charge (judge/measure/rounds.py's model: the clock scores; work moved out of the timed
request and a report short of the clock are judged against the baseline's own figures). Trusted
side; pure arithmetic over samples."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from judge.measure import scoring

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


@dataclass
class Samples:
    """One contender's measurements at one test point, a turn (a batch of calls) each, in
    milliseconds."""

    reported: list[float] = field(default_factory=list)  # by the harness: the calls' median
    each_call: list[list[float]] = field(default_factory=list)  # by the harness: every call's
    time_rt: list[float] = field(default_factory=list)  # by the judge, around `time`
    # by the judge, within `time`: its own work between the calls releasing the next one's
    # inputs (a copy or a send, from seeing the call before done): left out of the clock up to
    # what it cost in the floor turns (Floor.judged_ms)
    judged: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)  # calls in the batch
    # by the judge, around `prepare` and `collect` together (GPUs: the copies and the flush)
    prepare_rt: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # the run's CPU time over each turn (cgroup)
    first: list[bool] = field(default_factory=list)  # whether the turn came first in its round
    # the baseline's harness, in floor turns: the round trip of a request with no call, the
    # harness's own time handling it, and the `prepare` and `collect` of none; by loader, a batch
    # of empty run_kernels called that loader's way: their median report (the floor), the
    # batch's round trip, the judge's release work within it and its number of calls
    request_rt: list[float] = field(default_factory=list)
    request_handled: list[float] = field(default_factory=list)
    staging_rt: list[float] = field(default_factory=list)
    floor: dict[str, list[float]] = field(default_factory=dict)
    empty_rt: dict[str, list[float]] = field(default_factory=dict)
    empty_judged: dict[str, list[float]] = field(default_factory=dict)
    empty_calls: dict[str, list[int]] = field(default_factory=dict)
    empty_mapped: dict[str, list[float]] = field(default_factory=dict)  # mapping the releases
    throttled: int = 0  # rounds left out because the GPU's clock was throttled in them
    busy: int = 0  # rounds left out because the GPU still ran another process's work
    busy_ms: list[float] = field(default_factory=list)  # how much longer the probe waited then
    unmapped: int = 0  # turns after which its released sets were not seen mapped whole

    def extend(self, other: Samples) -> None:
        """Add a round's samples (kept in a Samples of their own until the round is judged)."""
        for name, values in vars(other).items():
            if isinstance(values, list):
                getattr(self, name).extend(values)

    def call_clock(self, floor: Floor) -> list[float]:
        """Each turn's time per call on the judge's clock, less the judge's own part of the
        request (Floor.judge_ms) and of the release (`judged`, up to Floor.judged_ms a call):
        what the contestant's process did per call, its harness's work included."""
        judged = self.judged + [0.0] * (len(self.time_rt) - len(self.judged))
        return [(rt - min(j, floor.judged_ms * calls) - floor.judge_ms) / calls
                for rt, j, calls in zip(self.time_rt, judged, self.calls)]

    def per_call(self, floor: Floor) -> list[float]:
        """Each turn's time per call that scores: `call_clock` less the harness's work as far
        as the judge credits it (Floor.credit)."""
        return [clock - floor.credit(clock, calls)
                for clock, calls in zip(self.call_clock(floor), self.calls)]

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
    several % on a shared 2-core host (the first of vector_add's 4 MB batches 7-8 % slower than the second),
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


# The harness's work is credited up to this many times the problem's target relative error of
# a call (Floor.resolution): the bound under which the judge charges no difference either
# (SIGNIFICANCE), so that what a trimmed harness gains is lost in the judge's own noise. On the
# CPU device a request's handling by the harness costs ~50 µs (its Python, cold after the
# flush) and the first call of a batch ~10 µs more: at 2 errors no vector_add point resolved
# (its 1 ms calls come two to a batch); at 3 the calls from ~1.3 ms there, ~70 µs at softmax's
# batches of 64 (bench/clock_resolution.py).
RESOLUTION_ERRORS = SIGNIFICANCE


def lower_quartile(values: Sequence[float]) -> float:
    """The first quartile (the value itself for one)."""
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=4, method="inclusive")[0]


def resolution(target_rse: float) -> float:
    """The fraction of a call that the harness's work is credited up to (Floor.resolution)."""
    return RESOLUTION_ERRORS * target_rse


@dataclass(frozen=True)
class Floor:
    """What the baseline's harness (no contestant code) measured of the timed requests besides
    the calls, for one loader, and what of it the judge credits back.

    A timed request's round trip is the judge's own part (writing the request, the pipes,
    thawing and freezing the run: `judge_ms`, the same whoever answers) and the contestant's
    process's: its harness's work per request and per call, and the calls. The harness shares
    that process, so its work can be trimmed — a leaner loop patched in from Python, a batch
    called from C through the C API — and whatever of it were subtracted as the baseline's
    harness showed it would be credited to a trimmed one as speed. So the judge credits the
    harness's work (`harness_ms`) only up to `resolution` of the call (the relative error the
    judge claims, the problem's target_rse): a trim gains at most that, at any size. A point
    whose calls are too short for the harness's work to fit in it is not resolvable
    (`resolvable`): its speedup is the harness's as much as the kernel's, and it does not carry
    the score (judge/judging/stages/score.py)."""

    request_ms: float = 0.0  # a `time` request with no call, round trip
    handled_ms: float = 0.0  # of which the harness's own time, from reading it to replying
    staging_ms: float = 0.0  # `prepare` and `collect` of no call (GPUs: the flush)
    call_ms: float = 0.0  # an empty run_kernel's whole cost per call, on the judge's clock
    empty_call_ms: float | None = None  # an empty run_kernel's reported time
    resolution: float = 0.0  # the fraction of a call that the harness's work is credited up to
    # of call_ms, mapping the call's released inputs (release.py): the kernel's work populating
    # their pages, which no run can make cheaper (faulted in, they cost the same or more), so
    # credited in full where the judge saw each set mapped whole (release.look_at_run), and not
    # at all where it did not (`mapping_credited`): a run that skipped the mapping saved its
    # cost itself, and a credit within the resolution gave it up to that much as speed (a
    # lazy mapping read 1.08x its control); it grows with the inputs' size where the rest
    # does not
    mapped_ms: float = 0.0
    # the judge's own work releasing a call's inputs (Samples.judged), a call, in the floor
    # turns: left out of a turn's clock up to this much a call. No more: a run that slowed the
    # judge's release (a thread contending for its CPU, its cache or its memory) while working
    # on in that span would have the slowdown credited as speed
    judged_ms: float = 0.0
    mapping_credited: bool = True  # the contender was seen mapping its released sets whole
    # the harness's work per request and per call (handled_ms, call_ms) undisturbed: the lower
    # quartile of the turns, not their median. Preemption only adds to a turn, and on a busy host
    # it lifted the median of an honest 4.4 ms point's empty calls tenfold (25 to 270 µs): the
    # point fell out of the score (`resolvable`) and an honest judging scored 1/40 of the next.
    # What a trimmed harness gains is the work, not the waits; the credit stays the median's
    steady_handled_ms: float | None = None
    steady_call_ms: float | None = None

    @property
    def judge_ms(self) -> float:
        """The request's round trip outside the harness: no run can shorten it."""
        return max(self.request_ms - self.handled_ms, 0.0)

    @property
    def around_call_ms(self) -> float:
        """The harness's work around each call, outside its report."""
        return max(self.call_ms - (self.empty_call_ms or 0.0), 0.0)

    def harness_ms(self, calls: float) -> float:
        """The harness's own work per call in a batch of `calls` (its request's share too)."""
        return self.handled_ms / max(calls, 1) + self.call_ms

    def trimmable_ms(self, calls: float) -> float:
        """Of `harness_ms`, what a run could trim (all but the mapping)."""
        return max(self.harness_ms(calls) - self.mapped_ms, 0.0)

    def steady_trimmable_ms(self, calls: float) -> float:
        """`trimmable_ms` of the undisturbed turns (`steady_call_ms`): what resolvability weighs."""
        handled = self.handled_ms if self.steady_handled_ms is None else self.steady_handled_ms
        call = self.call_ms if self.steady_call_ms is None else self.steady_call_ms
        return max(handled / max(calls, 1) + call - self.mapped_ms, 0.0)

    def credit(self, call_clock: float, calls: float) -> float:
        """What is subtracted from a call that took `call_clock`: the mapping of its inputs
        where it was seen done, and the rest of the harness's work up to `resolution` of the
        call."""
        mapping = min(self.mapped_ms, self.harness_ms(calls)) if self.mapping_credited else 0.0
        return mapping + min(self.trimmable_ms(calls), self.resolution * call_clock)

    def resolvable(self, call_clock: float, calls: float) -> bool:
        """Whether the harness's trimmable work fits in `resolution` of such a call, for a
        contender seen mapping its sets whole: what one that did not saved beyond the mapping
        the floor turns measured (pages the honest run's kernel then reads from its caches,
        TLB misses) is out of the judge's sight (4-6 % on sparse_read), so its point cannot
        carry the score."""
        return (self.mapping_credited
                and self.steady_trimmable_ms(calls) <= self.resolution * call_clock)

    def resolvable_from_ms(self, calls: float) -> float:
        """The shortest call, on the judge's clock, that is resolvable in batches of `calls`."""
        if self.resolution <= 0 or not self.mapping_credited:
            return math.inf
        return self.steady_trimmable_ms(calls) / self.resolution

    @classmethod
    def of(cls, base: Samples, loader: str | None = None, resolution: float = 0.0,
           mapped_whole: bool = True) -> Floor:
        """From the baseline's floor turns, for run_kernels called `loader`'s way (None: the
        only loader measured), for a contender seen to map its released sets whole
        (`mapped_whole`; else no mapping is credited to it)."""
        if not base.request_rt:
            return cls(resolution=resolution)
        if loader is None:
            loader = next(iter(base.floor), "")
        request = statistics.median(base.request_rt)
        handled = steady_handled = 0.0
        if base.request_handled:
            handled = min(statistics.median(base.request_handled), request)
            steady_handled = min(lower_quartile(base.request_handled), handled)
        floor = base.floor.get(loader)
        empty = statistics.median(floor) if floor else None
        call = steady_call = judged = 0.0
        if base.empty_rt.get(loader):
            turns = list(zip(base.empty_rt[loader], base.empty_calls[loader],
                             base.empty_judged.get(loader) or [0.0] * len(base.empty_rt[loader])))
            per_call = [(rt - j - request) / n for rt, n, j in turns]
            call = max(statistics.median(per_call), empty or 0.0)
            steady_call = min(max(lower_quartile(per_call), empty or 0.0), call)
            judged = statistics.median(j / n for _, n, j in turns)
        mapped = [m / n for m, n in zip(base.empty_mapped.get(loader, []),
                                        base.empty_calls.get(loader, [])) if n]
        return cls(request, handled,
                   statistics.median(base.staging_rt) if base.staging_rt else 0.0,
                   call, empty, resolution, statistics.median(mapped) if mapped else 0.0,
                   judged, mapping_credited=mapped_whole, steady_handled_ms=steady_handled,
                   steady_call_ms=steady_call)


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
    # the honest harness's work per call, and whether it fits in the judge's resolution of the
    # submission's call (Floor.resolvable: a point that is not does not carry the score)
    harness_ms: float = 0.0
    resolvable: bool = True
    resolvable_from_ms: float = 0.0  # the shortest call that would be, at this batch size
    lopsided: float = 0.0  # the fraction of the turns whose reports were lopsided

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


# A batch computed in its first calls (the others return at once, or every other call does the
# work of two) reports near-empty calls beside heavy ones: its mean call at least LOPSIDED times
# its lower quartile. Honest calls of a batch vary with their caches and with preemption, which
# would have to stop the run for seven times the batch's own length to look so.
LOPSIDED = 8.0


def lopsided(reports: list[float]) -> bool:
    """Whether a batch's reports are near-empty calls beside heavy ones (see LOPSIDED)."""
    if len(reports) < 2:
        return False
    quartile = sorted(reports)[len(reports) // 4]
    return statistics.fmean(reports) >= LOPSIDED * max(quartile, 1e-9)


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


def _beyond_report(got: Samples, floor: Floor) -> list[float]:
    """Per turn, what the clock saw beyond the reports, less the harness's work around each
    call as its loader's floor turns showed it."""
    return [(c - floor.around_call_ms - r) * n for c, r, n in zip(
        got.call_clock(floor), got.reported, got.calls)]


def charge(sub: Samples, base: Samples, floor: Floor | None = None,
           base_floor: Floor | None = None) -> Charge:
    """What the submission's calls are charged (see Charge), with the floors measured in the
    baseline's harness for the submission's loader (`floor`) and the baseline's (`base_floor`,
    the same where not given): each contender's own is subtracted from its times."""
    floor = floor or Floor.of(base)
    base_floor = base_floor or floor
    sub_clock = sub.per_call(floor)
    clock, reported = balanced_median(sub_clock, sub.first), statistics.median(sub.reported)
    calls = statistics.median(sub.calls)
    # per turn, what the clock saw beyond the reports, against the baseline's (the same harness
    # code): a forged report shows as more. It does not change the score (the clock is the
    # score); it says that the report was short
    time_excess, time_z = _excess(_beyond_report(sub, floor), _beyond_report(base, base_floor))
    allowance = ALLOWANCE_MS + ALLOWANCE_FRACTION * clock * calls  # of a turn
    raw = balanced_median(sub.call_clock(floor), sub.first)
    result = Charge(clock, reported, time_excess / calls,
                    time_z > SIGNIFICANCE and time_excess > allowance,
                    harness_ms=floor.steady_trimmable_ms(calls),
                    resolvable=floor.resolvable(raw, calls),
                    resolvable_from_ms=floor.resolvable_from_ms(calls),
                    lopsided=statistics.fmean(map(lopsided, sub.each_call))
                    if sub.each_call else 0.0)
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


def per_call_ms(got: Samples) -> float:
    """A contender's median time per call on the judge's clock, round trip included (0: none)."""
    return statistics.median(rt / n for rt, n in zip(got.time_rt, got.calls)) if got.calls else 0.0


def paired_ratios(sub: Samples, base: Samples) -> list[float]:
    """The two contenders' time per call on the clock, one over the other, per pair of rounds
    with the submission first in one and second in the other (the geometric mean of the two
    rounds' ratios): a host that slows down for a while slows both turns of a round (a shared host's
    batches vary by ±20 % from round to round, their ratio by a few percent), and the pair
    cancels the place's own cost (several %: `balanced_median`), so the ratio settles first."""
    ratios = [((s / n) / (b / m), first) for s, n, b, m, first in zip(
        sub.time_rt, sub.calls, base.time_rt, base.calls, sub.first) if b > 0 and s > 0]
    ahead = [r for r, first in ratios if first]
    behind = [r for r, first in ratios if not first]
    if len(sub.first) != len(sub.time_rt):  # no places recorded: round by round
        return [r for r, _ in ratios]
    return [math.sqrt(a * b) for a, b in zip(ahead, behind)]
