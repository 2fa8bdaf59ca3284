"""Time the submission against the baseline, point by point, the heaviest first: both harnesses
load the point and map the shared files, warm up, then the interleaved rounds
(judge/measure/rounds.py) run on fresh inputs; the kept calls' outputs are checked
(stages/check.py), and each point is charged (stages/score.py). Trusted code: the contenders are
the untrusted side."""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from judge.harness import protocol
from judge.host.telemetry import foreign_gpu_processes, gpu_state, throttle_meter
from judge.judging import contender
from judge.judging.contender import Contender
from judge.judging.context import DeviceNotReady, Judging, RunFailure
from judge.judging.record import TestReport
from judge.judging.reference import ProblemRuntimeError, TestCase
from judge.judging.rules import operator_rule
from judge.judging.stages import check, score
from judge.measure import charging, fresh_rounds, scoring
from judge.measure.flusher import CacheFlusher
from judge.measure.point import Measurement, measure_point
from judge.measure.release import Release, ReleaseFailed, huge_pages, look_at_run, make_room
from judge.measure.rounds import (
    PROBE_WAIT,
    BadReply,
    DeviceKeptBusy,
    GpuThrottled,
    Plan,
    batch_slots,
)
from judge.measure.shared import SharedTensors
from judge.problem.schema import ProblemSpec, TestPoint, Timing
from judge.settings import settings
from judge.verdicts import Verdict, overall_verdict

# Released sets the submission may map or hold beyond one per slot (what its harness maps) before
# it is stopped (Timer._after_turn): a few a run's own copies may keep for a moment
HELD_SETS_SLACK = 8
INPUTS_FILE = "inputs.raw"  # a contender's timed inputs where they are written (release.py)


def effective_timing(spec: ProblemSpec) -> Timing:
    """The problem's timing, its time per point capped by the deployment (`max_point_s`)."""
    timing, cap = spec.timing, settings().max_point_s
    return timing.model_copy(update={"max_s": cap}) if 0 < cap < timing.max_s else timing


def set_bytes(specs: list[tuple[list[int], str]]) -> int:
    """The bytes a set of tensors of `specs` spans in a shared file (protocol.set_layout)."""
    return protocol.set_layout([math.prod(shape) * getattr(torch, dtype).itemsize
                                for shape, dtype in specs])[1]


def time_all(j: Judging, sub: Contender, base: Contender, tests: list[TestPoint],
             cases: dict[str, list[TestCase]]) -> None:
    """Every timed point; a contender's failure ends the timing with its verdict."""
    before = gpu_state(j.device)
    _await_idle_gpu(j, sub, base)
    timer = Timer(j, sub, base)
    try:
        timer.time_points(tests, cases)
    finally:
        timer.close()
        if before is not None:
            j.result.applied["gpu_state"] = {"before": before, "after": gpu_state(j.device)}


def _await_idle_gpu(j: Judging, sub: Contender, base: Contender, timeout_s: float = 5.0) -> None:
    """Before timing: no process but the judge's own may hold the GPU (a run killed just
    before, another program); wait a little for it to go, else say it shared the card."""
    own = {os.getpid(), *sub.proc.pids(), *base.proc.pids()}
    deadline = time.monotonic() + timeout_s
    while (foreign := foreign_gpu_processes(j.device, own)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if foreign:
        j.result.applied["gpu_shared_with"] = foreign
        j.result.flags.append(f"processes {foreign} held the GPU while this judging "
                              "timed its calls: its times may be slow")


class Timer:
    """The timing of one judging's points, with what its rounds share: the device's throttle
    meter, the judge's own cache flusher (CPU), the contenders' CPU time."""

    def __init__(self, j: Judging, sub: Contender, base: Contender):
        self.j, self.sub, self.base = j, sub, base
        self.by_role = {"submission": sub, "baseline": base}
        self.releases: dict[str, Release] = {}  # each contender's, for the point being timed
        self.throttled = throttle_meter(j.device)
        self.flusher = (CacheFlusher(j.device.flush_bytes, j.contender_cpus)
                        if j.flushes_from_outside else None)
        self.timing = effective_timing(j.spec)
        self.clock_hold_confirmed = False  # a point's clock hold reproduced (_confirm_clock_hold)

    def close(self) -> None:
        if self.flusher is not None:
            self.flusher.close()

    def time_points(self, tests: list[TestPoint], cases: dict[str, list[TestCase]]) -> None:
        j = self.j
        reports = {r.name: r for r in j.result.tests}
        # the largest first: a point's share of a total time is known from above once the
        # points that weigh most are timed (scoring.point_share)
        timed = sorted((t for t in tests if t.timed),
                       key=lambda t: -self.point_bytes(t, cases[t.name]))
        earlier = {"submission": 0.0, "baseline": 0.0}
        aggregate = j.spec.scoring.aggregate
        for index, test in enumerate(timed):
            # the first point is the heaviest: the others' time caps go with their weight
            # against it (its time per call is all `earlier` holds once it is timed)
            weight = functools.partial(scoring.point_weight, aggregate,
                                       heaviest_ms=dict(earlier)) if index else None
            share = functools.partial(scoring.point_share, aggregate, len(timed),
                                      earlier_ms=dict(earlier))
            try:
                self.time_point(test, cases[test.name], reports[test.name], share, earlier,
                                weight)
                self._confirm_clock_hold(test, cases[test.name], reports[test.name], share,
                                         weight)
            except RunFailure as failure:
                if failure.verdict is Verdict.SE:
                    raise ProblemRuntimeError(failure.message) from None
                report = reports[test.name]
                report.verdict = failure.verdict
                report.message = f"during the timing run: {failure.message}"
                j.result.verdict = overall_verdict([t.verdict for t in j.result.tests
                                                    if t.verdict])
                return

    def _confirm_clock_hold(self, test: TestPoint, cases: list[TestCase], report: TestReport,
                            share, weight) -> None:
        """A clock hold at this point, none confirmed yet in the judging: the point is timed a
        second time, and the hold stays only if that timing holds it too; else it is a flag. A
        forged timer is short of the clock in every timing; a busy host put an honest loop.cpp's
        report short of it in one timing of six (three CPU hogs on two cores), and a held honest
        result leaves the boards until an organizer looks. The record, and the time that
        scores, stay the first timing's: a second draw given only to the points that came out
        slow would lower their times on average. A wrong output in the second timing is the
        point's verdict (RunFailure, as in the first)."""
        result = self.j.result
        first = [h for h in result.holds
                 if h["by"] == score.CLOCK_HOLD and h["test"] == test.name]
        if not first or self.clock_hold_confirmed:
            return
        flags, holds = list(result.flags), list(result.holds)
        self.time_point(test, cases, copy.deepcopy(report), share, None, weight)
        again = any(h["by"] == score.CLOCK_HOLD and h["test"] == test.name
                    for h in result.holds[len(holds):])
        result.flags[:], result.holds[:] = flags, holds  # the record is the first timing's
        if again:
            self.clock_hold_confirmed = True
            for hold in first:
                hold["what"] += "; held again when the point was timed a second time"
            return
        for hold in first:
            result.holds.remove(hold)
        result.flags.append(f"{test.name}: the report short of the clock was not short when "
                            "the point was timed a second time: flagged, not held")

    def point_bytes(self, test: TestPoint, cases: list[TestCase]) -> int:
        """A call's inputs and outputs at `test`, in bytes."""
        return set_bytes(self._input_specs(test)) + self._output_bytes(cases)

    def _input_specs(self, test: TestPoint) -> list[tuple[list[int], str]]:
        return [(self.j.reference.input_shape(a, test), a.dtype) for a in self.j.problem.inputs]

    @staticmethod
    def _output_bytes(cases: list[TestCase]) -> int:
        return set_bytes([(s["shape"], s["dtype"]) for s in cases[0].output_specs.values()])

    def time_point(self, test: TestPoint, cases: list[TestCase], report: TestReport,
                   share: Callable[[dict[str, float]], float] | None = None,
                   earlier_ms: dict[str, float] | None = None,
                   weight: Callable[[dict[str, float]], float] | None = None) -> None:
        """Time one point; `share`: what it weighs in the score, `weight`: what it weighs against
        the heaviest point (see measure.rounds.Plan); its time per call is added to
        `earlier_ms`."""
        j = self.j
        if self.timing.max_s < j.spec.timing.max_s:
            j.result.applied["max_point_s"] = self.timing.max_s
        cpu_meter = self._cpu_meter()
        input_specs, output_bytes = self._input_specs(test), self._output_bytes(cases)
        slots = batch_slots(max(set_bytes(input_specs), output_bytes), j.device.kind)
        # the round's inputs in the judge's memory alone, released a call at a time from sealed
        # files (two rounds' held at once: fresh_rounds.FreshRounds)
        fresh_inputs = SharedTensors(None, input_specs, writable_by_others=False, slots=slots)
        mapped = protocol.released_by_mapping(fresh_inputs.stride)
        if mapped:
            make_room(2 * slots)
        if fresh_inputs.stride % protocol.HUGE_PAGE == 0:  # released in huge pages, if given
            j.result.applied["huge_page_sets"] = huge_pages()
        outputs, self.releases, self.inputs_files, rounds = {}, {}, {}, None
        try:
            for role, who in self.by_role.items():
                outputs[role] = contender.guard(who, lambda w=who: self._shared_files(
                    w, test, cases, slots, None if mapped else fresh_inputs), self.sub)
            self._prepare(test, cases, slots)
            rounds = fresh_rounds.FreshRounds(
                self._drawer(test), fresh_inputs.write_sets, outputs,
                j.workdir / "kept" / test.name,
                fresh_rounds.checked_calls(self.timing.checked_calls, output_bytes),
                j.contender_cpu_set, set_bytes=fresh_inputs.size,
                seal=fresh_inputs.seal if mapped else None)
            measured = self._measure(rounds, cpu_meter, slots, share, weight)
        finally:
            if rounds is not None:
                rounds.close()
            for release in self.releases.values():
                release.close()
            for shared_file in (fresh_inputs, *outputs.values(), *self.inputs_files.values()):
                shared_file.close()
        self._account(test, report, measured, rounds, cpu_meter, earlier_ms)

    def _prepare(self, test: TestPoint, cases: list[TestCase], slots: int) -> None:
        """Both contenders load the point with the shared files mapped, and warm up."""
        j, run_s = self.j, self.j.spec.limits.run_s
        shared = {role: {"release": who.out_path(test.name, protocol.RELEASE_SOCKET),
                         "outputs": who.out_path(test.name, "fresh.raw"), "slots": slots}
                  for role, who in self.by_role.items()}
        for role in self.inputs_files:  # sets written into the contender's file at release
            shared[role]["inputs"] = self.by_role[role].out_path(test.name, INPUTS_FILE)
        for who in (self.sub, self.base):
            contender.guard(who, lambda w=who: self._load(w, test, cases, shared[w.role]),
                            self.sub)
            contender.guard(who, lambda w=who: check.warm(j, w, test), self.sub)
            contender.guard(who, lambda w=who: w.request(
                "warmup", self.timing.warmup_s + 3 * run_s, seconds=self.timing.warmup_s,
                min_calls=2), self.sub)

    def _load(self, who: Contender, test: TestPoint, cases: list[TestCase], shared: dict) -> None:
        """A contender loads the point, its harness connected to its release socket."""
        check.load(self.j, who, test, cases, shared)
        try:
            self.releases[who.role].accept()
        except ReleaseFailed as exc:
            raise RunFailure(Verdict.RE, str(exc)) from None

    def _drawer(self, test: TestPoint) -> Callable[[int, int], list]:
        """Each timed call's fresh inputs, from a seed of its own."""
        j = self.j

        def draw_inputs(index: int, slot: int) -> list:
            drawn = j.reference.inputs(test, check.round_seed(j, test, index, slot))
            return [drawn[a.name] for a in j.problem.inputs]
        return draw_inputs

    def _measure(self, rounds: fresh_rounds.FreshRounds, cpu_meter, slots: int, share,
                 weight) -> Measurement:
        """The point's plan for the measurement engine, and what it measured; its failures
        as the judging's."""
        j, run_s = self.j, self.j.spec.limits.run_s

        def request(role: str, op: str, **fields) -> dict:
            who = self.by_role[role]
            # a timed request from off the contender's CPUs, its thaw included (off_contender)
            with (self.releases[role].off_contender() if op == "time"
                  else contextlib.nullcontext()):
                return contender.guard(who, lambda: who.request(op, run_s, **fields), self.sub)

        def release(role: str, calls: int, first: bool) -> float | None:
            if first:
                self.releases[role].open_turn(rounds.sealed)
                return None
            self.releases[role].turn(calls, rounds.sealed, self.by_role[role].proc.replied, run_s)
            return self.releases[role].judged_ns / 1e6

        def freeze(role: str, frozen: bool) -> None:
            if not self.by_role[role].proc.freeze(frozen):
                j.result.applied["frozen_between_turns"] = False

        j.result.applied.setdefault("frozen_between_turns", True)
        plan = Plan(request, freeze, self.timing, rounds,
                    loaders={role: who.loader for role, who in self.by_role.items()},
                    flush=self.flusher.flush if self.flusher else None, cpu_ns=cpu_meter,
                    audit=operator_rule(j.language.name, j.spec.rules) is not None,
                    throttled=self.throttled, max_calls=slots, share=share, weight=weight,
                    release=release,
                    after_turn=lambda role: self._after_turn(role, rounds, slots),
                    probe_wait_s=None if j.device.kind == "cpu" else PROBE_WAIT * run_s)
        try:
            return measure_point(plan)
        except GpuThrottled as exc:
            raise DeviceNotReady(str(exc)) from None
        except DeviceKeptBusy as exc:
            raise RunFailure(Verdict.TLE, str(exc)) from None
        except BadReply as exc:
            verdict = Verdict.SE if exc.role == "baseline" else Verdict.RE
            raise RunFailure(verdict, str(exc)) from None

    def _account(self, test: TestPoint, report: TestReport, measured: Measurement, rounds,
                 cpu_meter, earlier_ms: dict[str, float] | None) -> None:
        """What the point measured: into the record, the kept calls checked, the point charged."""
        j, samples, sub = self.j, measured.samples, measured.samples["submission"]
        for role, got in samples.items():
            j.kernel_ms += sum(got.reported)
            if earlier_ms is not None:
                earlier_ms[role] += charging.per_call_ms(got)
        report.target_rse, report.time_cap_s = measured.target_rse, measured.time_cap_s
        report.speedup_rse = measured.speedup_rse
        applied = j.result.applied
        if sub.throttled:
            applied["throttled_rounds"] = applied.get("throttled_rounds", 0) + sub.throttled
        if sub.busy:
            applied["device_busy_rounds"] = applied.get("device_busy_rounds", 0) + sub.busy
            j.result.hold("device", test.name, f"the device still ran work of the submission's "
                          f"before {sub.busy} of the baseline's turns (up to "
                          f"{max(sub.busy_ms):.2f} ms): those rounds were left out")
        if sub.unmapped:
            j.result.flags.append(
                f"{test.name}: after {sub.unmapped} of its turns the run had not mapped whole the "
                "inputs released to it (a harness changed, or mappings the judge cannot read): "
                "no mapping is credited to it and the point cannot carry the score")
        counted = all(len(got.cpu) == len(got.reported) for got in samples.values())
        applied["cpu_time_charged"] = (applied.get("cpu_time_charged", True) and counted
                                       and cpu_meter is not None)
        check.check_rounds(j, test, rounds)
        report.floor_ms = measured.floors["submission"].empty_call_ms
        report.batch_calls = statistics.median(sub.calls)
        report.baseline_resolvable_from_ms = measured.baseline_resolvable_from_ms
        score.charge_point(j, report, test, measured.charge, measured.stats["submission"],
                           measured.stats["baseline"])

    def _shared_files(self, who: Contender, test: TestPoint, cases: list[TestCase], slots: int,
                      staging: SharedTensors | None) -> SharedTensors:
        """A contender's timed outputs, in a file of its scratch directory that the judge maps;
        where sets are released by writing them (`staging`: the judge's), its inputs file too,
        which it maps read-only."""
        path = who.host_out(test.name, "fresh.raw")
        who.proc.freeze(True)  # the run's own threads must not move things under the judge
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.parent.resolve().is_relative_to(Path(who.scratch.host).resolve()):
                raise OSError("a link leads out of it")
            for name in ("fresh.raw", INPUTS_FILE):  # whatever the run may have left there
                (path.parent / name).unlink(missing_ok=True)
            outputs = SharedTensors(path, [(spec["shape"], spec["dtype"])
                                           for spec in cases[0].output_specs.values()],
                                    writable_by_others=True, slots=slots)
            written = None
            if staging is not None:
                inputs = SharedTensors(path.parent / INPUTS_FILE, staging.specs,
                                       writable_by_others=False, slots=slots)
                self.inputs_files[who.role] = inputs
                written = (staging, inputs)
            self.releases[who.role] = Release(path.parent, outputs.control,
                                              self.j.contender_cpu_set, written)
            return outputs
        except OSError as exc:
            raise RunFailure(Verdict.RE, f"the run's scratch directory could not hold its "
                                         f"outputs ({exc})") from None
        finally:
            who.proc.freeze(False)

    def _after_turn(self, role: str, rounds: fresh_rounds.FreshRounds, slots: int) -> bool:
        """After a turn of the submission's, it frozen, where sets are released mapped: it maps
        or holds no more of them than its harness's slots map (one each), and whether it maps
        whole every set released to it in the turn (release.look_at_run). Each set is the
        judge's memory, not the run's (the run cannot write it, and it is not counted against
        its limit): a run that kept every set it was sent would grow the judge by a round's
        inputs every round. The baseline's harness is the judge's own; a host where the run's
        mappings cannot be read verifies nothing (recorded: `mapping_verified`)."""
        release = self.releases[role]
        if role != "submission" or release.written is not None or not release.turn_sent:
            return True
        seen = look_at_run(self.sub.proc.pids(), rounds.sealed[:release.turn_sent])
        if seen.held > slots + HELD_SETS_SLACK:
            self.sub.proc.kill()
            raise RunFailure(Verdict.RE, f"the run kept {seen.held} of the input sets the judge "
                                         f"released to it (its {slots} slots map one each)")
        if seen.unmapped is None:
            self.j.result.applied["mapping_verified"] = False
        return seen.unmapped == 0

    def _cpu_meter(self):
        """Each contender's CPU time, where a turn's CPU time is its work: on the CPU device
        with one CPU per contender (more would count a parallel call several times over)."""
        cpus = self.j.contender_cpu_set
        if self.j.device.kind != "cpu" or cpus is None or len(cpus) != 1:
            return None
        return lambda role: self.by_role[role].proc.cpu_ns()
