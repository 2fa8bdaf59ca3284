"""One judging, end to end: rules, compile, run and check every test point, time against the
baseline, score. Trusted code: contestant code only ever runs inside a sandboxed harness process.

Overall verdict: the first non-AC test point's verdict in test order (SPEC §4). After a WA the
remaining test points still run (the process is healthy); after RE, TLE, MLE or OLE they are not
run. Timing happens only when every test point is AC.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import secrets
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

import judge
from checkers import CheckReport, check_outputs, checks_whole_calls, get_checker
from judge.harness import protocol
from judge.host.device import DeviceInfo
from judge.host.telemetry import (
    GpuMemoryWatch,
    await_gpu_release,
    foreign_gpu_processes,
    gpu_state,
    throttle_meter,
    unusable_compute_mode,
)
from judge.judging import dequant, jit_cache, profiling, scoring
from judge.judging import timing as timing_loop
from judge.judging.admission import Admission, SubmissionRejected, Terms, admit
from judge.judging.flusher import CacheFlusher
from judge.judging.guard import GuardRun
from judge.judging.record import JudgeResult, TestReport
from judge.judging.reference import ProblemRuntimeError, Reference, TestCase, derive_seed
from judge.judging.rules import check_rules, operator_rule
from judge.judging.shared import SharedTensors
from judge.judging.warm import (
    Slot,
    SlotPool,
    WarmHarness,
    contender_cpus,
    cpu_threads,
    startup_env,
)
from judge.languages import Language, infer_language
from judge.problem import exprs
from judge.problem.schema import Problem, TestPoint, Timing
from judge.settings import settings
from judge.verdicts import State, Verdict, overall_verdict
from sandbox import (
    Mount,
    ProtocolError,
    ReplyTimeout,
    Sandbox,
    SandboxLimits,
    SandboxProcess,
)
from sandbox.base import parse_cpus

STARTUP_GRACE_S = 90.0  # interpreter, torch and language package imports
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
# Host memory a JIT compile may add to a harness (TileLang: TVM's lowering and nvcc, ~0.5 GB
# each for the bundled templates, bench/tilelang_jit_memory.py), on top of the problem's limit.
JIT_COMPILER_MB = 2048
# Device memory of a submission's process when the problem sets none: the baseline, started
# first, and the judge's own reference share the rest.
DEFAULT_GPU_MEMORY_SHARE = 0.4
# A timed call's outputs from this size on are checked on every CPU at once (_check_rounds):
# 28 ms a check alone, 15 ms on two threads, for vector_add's 4 MB point here
PARALLEL_CHECK_BYTES = 128 << 10
# what a test point's record takes over from its checker's report (judge/judging/record.py)
CHECK_FIELDS = tuple(f.name for f in dataclasses.fields(CheckReport)
                     if f.name in TestReport.__dataclass_fields__
                     and f.name not in ("worst", "message"))


class NotRunnable(ValueError):
    """The language cannot run on this device; route it to a worker that can."""


class DeviceNotReady(Exception):
    """The device is not in a state a judging can run in (its compute mode, a card that
    throttles every call): a system error, never the contestant's."""


@dataclass
class JudgeOptions:
    seed: int | None = None  # None: a fresh secret seed (always, outside tests)
    timing: bool = True
    tests: list[str] | None = None  # only these test points (self-tests, debugging)
    on_state: Callable[[State], None] | None = None  # progress: COMPILING, then RUNNING
    # where the judging's harnesses come from: a slot started ahead for it (`kjudge judge`
    # starts one before importing torch), else a worker's pool, else one started now
    slot: Slot | None = None
    pool: SlotPool | None = None
    # a profile judging: the submission's harness runs under Nsight Compute, and one more call
    # of the (one) test point is profiled once it is checked (judge/judging/profiling.py)
    profile: profiling.Profiling | None = None


class RunFailure(Exception):
    def __init__(self, verdict: Verdict, message: str):
        super().__init__(message)
        self.verdict = verdict
        self.message = message


@dataclass
class Contender:
    """One harness process (the submission or the baseline) and its job directories."""

    role: str
    proc: SandboxProcess
    scratch: Mount
    sandbox: Sandbox
    versions: dict = field(default_factory=dict)
    setup: dict = field(default_factory=dict)  # flush size, persisting-L2 reset (from the harness)
    jit: bool = False  # compiles at the first call of each new shape: warmed before the checks
    warmed: set[str] = field(default_factory=set)  # test points already called once
    gpu_watch: GpuMemoryWatch | None = None  # device memory of the process tree (NVIDIA)
    warm: WarmHarness | None = None  # the slot's harness this process was started as
    jit_cache: tuple[Path, Path] | None = None  # (the run's JIT cache folder, the kept entry)
    loaded: bool = False  # contestant code (or the baseline) has been loaded into the process
    idle_mb: float = 0.0  # the harness's memory before its config: interpreter and torch

    def out_path(self, *parts: str) -> str:
        return self.sandbox.path(self.scratch, "out", *parts)

    def host_out(self, *parts: str) -> Path:
        return Path(self.scratch.host, "out", *parts)

    def request(self, op: str, timeout: float, turn: bool = False, **fields) -> dict:
        """Send a request; turn every way the process can fail into a verdict. With `turn`,
        the run is thawed for the request alone (SandboxProcess.send)."""
        message = protocol.request(op, **fields)
        try:
            self.proc.send(message, turn)
        except ProtocolError as exc:
            self.proc.wait(2)
            raise self.death(str(exc)) from None
        return self.receive(timeout, message)

    def receive(self, timeout: float, sent: dict | None = None) -> dict:
        """The next reply (to `sent`, when given; else a greeting)."""
        try:
            reply = self.proc.receive(timeout)
        except ReplyTimeout:
            self.proc.kill()
            raise RunFailure(Verdict.TLE, f"no result within {timeout:g} s") from None
        except ProtocolError as exc:
            self.proc.wait(2)
            raise self.death(str(exc)) from None
        if self.proc.output_exceeded:
            raise self.death("output limit exceeded")
        if sent is not None and not protocol.answers(reply, sent):
            self.proc.kill()
            raise RunFailure(Verdict.RE, f"the reply to the {sent['op']} request did not answer "
                                         "it: the results channel was written by the run itself")
        if not reply.get("ok"):
            kind = reply.get("kind", "RE")
            verdict = Verdict[kind] if kind in Verdict.__members__ else Verdict.RE
            if verdict is Verdict.SE and self.loaded:
                verdict = Verdict.RE  # claimed by a process that runs contestant code
            raise RunFailure(verdict, str(reply.get("error", "")))
        return reply

    def death(self, detail: str) -> RunFailure:
        if self.proc.output_exceeded:
            return RunFailure(Verdict.OLE, "stdout/stderr exceeded the output limit")
        if self.gpu_memory_exceeded():
            return RunFailure(Verdict.MLE, f"GPU memory limit exceeded: "
                                           f"{self.gpu_watch.limit_bytes / 2**20:.0f} MiB "
                                           f"(peak seen {self.gpu_watch.peak_mb:.0f} MiB)")
        if self.proc.memory_exceeded():
            return RunFailure(Verdict.MLE, "memory limit exceeded")
        tail = self.proc.log()[-2000:]
        return RunFailure(Verdict.RE, f"{self.proc.exit_description()}; {detail}\n{tail}".strip())

    def gpu_memory_exceeded(self) -> bool:
        """Over its device memory limit, now (a fresh look) or at any poll so far."""
        if self.gpu_watch is None:
            return False
        self.gpu_watch.poll()
        return self.gpu_watch.exceeded

    def close(self) -> None:
        if self.gpu_watch is not None:
            self.gpu_watch.stop()
        self.proc.close()


class JudgingRun:
    """One judging of one source, in this process: its stages, contenders and record."""

    def __init__(self, problem: Problem, source: str, admission: Admission, device: DeviceInfo,
                 sandbox: Sandbox, options: JudgeOptions):
        language = admission.language
        self.admission = admission
        self.problem = problem
        self.spec = problem.spec
        self.source = source
        self.language = language
        self.device = device
        self.sandbox = sandbox
        self.options = options
        self.secret = options.seed if options.seed is not None else secrets.randbits(63)
        self.slot: Slot | None = None  # taken in run(): its processes serve this judging only
        self.result = JudgeResult(problem.slug, problem.version, language.name)
        self.result.applied = {
            "device": device.torch_name, "device_kind": device.kind, "device_model": device.model,
            "sandbox": sandbox.name,
            "toolchain": language.toolchain_version(sandbox), "judge": judge.__version__,
        }
        self.kernel_ms = 0.0
        self.contender_cpus = contender_cpus(device)
        self.contender_cpu_set = parse_cpus(self.contender_cpus) if self.contender_cpus else None
        if self.contender_cpus is not None:
            self.result.applied["contender_cpus"] = self.contender_cpus
        if sandbox.trusted_code_only:
            self.result.flags.append("judged in the trusted sandbox, which isolates nothing: "
                                     "the judge's own self-test code only")
        elif not sandbox.isolates_filesystem:
            self.result.flags.append(f"judged in the {sandbox.name} sandbox, which isolates "
                                     "neither files nor network: not for untrusted code")

    # -- stages ----------------------------------------------------------------------------
    def run(self) -> JudgeResult:
        started = time.monotonic()
        # an extra opinion on Python sources, formed while the sandbox starts and the outputs
        # are checked: flags, no verdict; taken before timing, so that it never shares a CPU
        # with a timed call
        self.opinion = GuardRun(self.source) if self.language.is_python else None
        try:
            why = unusable_compute_mode(self.device)
            if why:
                raise DeviceNotReady(why)
            self._run()
        except ProblemRuntimeError as exc:
            self.result.verdict, self.result.message = Verdict.SE, f"problem error: {exc}"
        except DeviceNotReady as exc:
            self.result.verdict, self.result.message = Verdict.SE, f"device not ready: {exc}"
        finally:
            if self.slot is not None:
                self.slot.close()  # its processes, and the job directory with them
            self._take_opinion()
            self.result.wall_s = time.monotonic() - started
            self.result.kernel_s = self.kernel_ms / 1000
        return self.result

    @contextlib.contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        """Add the wall time of the block to the phase `name` of the record."""
        started = time.monotonic()
        try:
            yield
        finally:
            phases = self.result.phases
            phases[name] = phases.get(name, 0.0) + time.monotonic() - started

    def _progress(self, state: State) -> None:
        if self.options.on_state:
            self.options.on_state(state)

    def _take_slot(self) -> Slot:
        env = startup_env(self.sandbox, self.device)
        options = self.options
        if options.profile is not None:  # a harness of its own, under the profiler
            ncu = options.profile.ncu
            try:
                shown = profiling.folders(ncu, keep_out=self.problem.path)
            except ValueError as exc:
                raise ProblemRuntimeError(str(exc)) from None
            slot = Slot.start(self.sandbox, env, ahead=False, shown=shown,
                              wrap=functools.partial(profiling.wrapper, ncu))
        elif options.slot is not None and options.slot.env == env and not options.slot.taken:
            slot, options.slot.taken = options.slot, True
        elif options.pool is not None:
            slot = options.pool.take(env)
        else:
            slot = Slot.start(self.sandbox, env, ahead=False)
        self.result.applied["warm_start"] = slot.ahead
        return slot

    @property
    def workdir(self) -> Path:
        return self.slot.workdir

    @property
    def inputs_mount(self) -> Mount:
        return self.slot.inputs

    def _quiet(self):
        """While timing: the worker's next slot, warming up, is frozen."""
        return self.options.pool.quiet() if self.options.pool else contextlib.nullcontext()

    def _run(self) -> None:
        violation = check_rules(self.source, self.language.name, self.spec.rules)
        if violation:
            self.result.verdict, self.result.message = Verdict.RV, str(violation)
            return
        with self._phase("sandbox_start"):
            self.slot = self._take_slot()  # started ahead: they warm up while this compiles
        self._progress(State.COMPILING)
        with self._phase("compile"):
            compiled = self._compile(self.language, self.source)
        self.result.compile_log = compiled.log
        self.result.applied["compile_cached"] = compiled.cached
        if not compiled.ok:
            self.result.verdict = Verdict.CE
            self.result.message = "compilation failed" + (" (time limit)" if compiled.timed_out
                                                          else "")
            return
        if not self.admission.runnable:
            raise NotRunnable(self.admission.why_not)
        tests = self._selected_tests()
        self._progress(State.RUNNING)
        try:
            self.checker = get_checker(self.spec.checker, self.problem.path)
        except Exception as exc:
            raise ProblemRuntimeError(f"checker {self.spec.checker} failed to load: {exc}") from exc
        reference = self.reference = Reference(self.problem, self.device.torch_name)
        # outputs are the only files a run writes: a disk-filling submission dies at this size
        largest = max(math.prod(spec["shape"]) * getattr(torch, spec["dtype"]).itemsize
                      for t in tests for spec in reference.output_specs(t).values())
        self.file_size_mb = max(64, math.ceil(4 * largest / 2**20))
        # The baseline loads first: it takes its device memory before any contestant code runs
        # (a submission hogging the GPU cannot make the judge fail), and loads while the
        # reference computes the expected outputs.
        with self._phase("sandbox_start"):
            baseline = self._spawn_baseline() if self.options.timing else None
            if baseline is None:
                self.slot.harnesses["baseline"].proc.close()  # no timing: no baseline
        submission = None
        try:
            with self._phase("reference"):
                cases = {t.name: self._cases(reference, t) for t in tests}
            with self._phase("sandbox_start"):
                if baseline is not None:
                    try:
                        self._await_ready(baseline)
                    except RunFailure as failure:
                        raise ProblemRuntimeError(
                            f"the baseline failed to load: {failure.message}") from None
                try:
                    submission = self._start("submission", self.language, compiled.artifact)
                except RunFailure as failure:
                    self.result.verdict, self.result.message = failure.verdict, failure.message
                    self.result.tests = [self._report(t, None) for t in tests]
                    return
            self.result.applied["versions"] = submission.versions
            self.result.applied["timing_setup"] = submission.setup
            if self.flushes_from_outside:
                self.result.applied["timing_setup"].update(
                    flush_bytes=self.device.flush_bytes,
                    flush_by="a process of the judge on the contenders' CPUs")
            with self._phase("correctness"):
                self._check_all(submission, tests, cases)
            self.result.verdict = overall_verdict([t.verdict for t in self.result.tests
                                                   if t.verdict])
            if self.result.verdict is Verdict.AC and self.options.profile is not None:
                with self._phase("profile"):
                    self._profile(submission, tests[-1])
            if self.result.verdict is Verdict.AC and baseline is not None:
                self._take_opinion()
                with self._phase("timing"), self._quiet():
                    self._time_all(submission, baseline, tests, cases)
        finally:
            if submission is not None:
                self._record_memory(submission)
            for who in (submission, baseline):
                if who is not None:
                    self._close(who)
        self._score()

    def _compile(self, language: Language, source: str):
        limits = SandboxLimits(memory_mb=max(self.spec.limits.memory_mb, 4096), pids=512,
                               output_bytes=256 * 1024)
        return language.compile(source, self.device, self.sandbox, limits,
                                self.spec.limits.compile_s)

    def _selected_tests(self) -> list[TestPoint]:
        tests = self.problem.tests_for(self.device.kind)
        if self.options.tests is not None:
            tests = [t for t in tests if t.name in self.options.tests]
        if not tests:
            raise SubmissionRejected(f"problem {self.problem.slug} has no test point for the "
                                     f"{self.device.kind} device")
        return tests

    def _cases(self, reference: Reference, test: TestPoint) -> list[TestCase]:
        count = self.spec.timing.input_sets if test.timed else 1
        cases = []
        for index in range(count):
            case = reference.case(test, derive_seed(self.secret, test.name, index))
            path = self.workdir / "inputs" / test.name / f"{index}.pt"
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({k: (v.cpu() if isinstance(v, torch.Tensor) else v)
                        for k, v in case.inputs.items()}, path)
            if not checks_whole_calls(self.checker):  # else the checker reads them
                case.inputs.clear()  # the file holds them now: free the judge's copy
            cases.append(case)
        if self.device.kind != "cpu":
            torch.cuda.empty_cache()
        return cases

    # -- processes -------------------------------------------------------------------------
    def _start(self, role: str, language: Language, artifact: Path) -> Contender:
        contender = self._spawn(role, language, artifact, self.source)
        self._await_ready(contender)
        return contender

    def _spawn_baseline(self) -> Contender:
        path = self.problem.path / self.spec.baseline
        source = path.read_text()
        language = infer_language(path, source)
        compiled = self._compile(language, source)
        if not compiled.ok:
            raise ProblemRuntimeError(f"the baseline does not compile:\n{compiled.log}")
        self.result.applied["baseline_language"] = language.name
        return self._spawn("baseline", language, compiled.artifact, source)

    @property
    def gpu_memory_limit_bytes(self) -> int | None:
        """The submission's device memory: the problem's limit, else a share of the device's."""
        if self.device.kind == "cpu":
            return None
        if self.spec.limits.gpu_memory_mb is not None:
            return self.spec.limits.gpu_memory_mb * 2**20
        if self.device.memory_bytes:
            return int(DEFAULT_GPU_MEMORY_SHARE * self.device.memory_bytes)
        return None

    @property
    def flushes_from_outside(self) -> bool:
        """On the CPU device the judge flushes the cache itself (judge/judging/flusher.py); a GPU's
        cache is flushed by the harness, on the device, inside `prepare`."""
        return self.device.kind == "cpu"

    def _spawn(self, role: str, language: Language, artifact: Path, source: str) -> Contender:
        """Hand the slot's harness for `role` its artifact, limits and config (not waiting for
        it to load); a JIT's cache from earlier judgings of this very source (judge/judging/jit_cache.py)."""
        warm = self.slot.harnesses[role]
        env = language.runtime_env(self.device, self.sandbox)
        cache = None
        if language.jit_cache_env:
            cache = jit_cache.entry(language, source, self.device, self.sandbox)
            used = jit_cache.restore(cache, warm.scratch.host)
            env |= {name: self.sandbox.path(warm.scratch, used.name)
                    for name in language.jit_cache_env}
        shutil.copy2(artifact, warm.sub.host / artifact.name)
        run_device = self.sandbox.device_env(self.device)[1]  # its name inside the sandbox
        gpu_limit = self.gpu_memory_limit_bytes if role == "submission" else None
        jit = self.device.kind in language.jit_devices
        # a JIT compiles inside this process tree (TileLang runs nvcc): room for the compiler
        memory_mb = self.spec.limits.memory_mb + (JIT_COMPILER_MB if jit else 0)
        limits = SandboxLimits(memory_mb=memory_mb, output_bytes=self.spec.limits.output_kb * 1024,
                               file_size_mb=self.file_size_mb, cpus=self.contender_cpus)
        config = {
            "loader": language.loader,
            "artifact": self.sandbox.path(warm.sub, artifact.name),
            "args": [a.model_dump() for a in self.spec.signature],
            "device": run_device,
            "flush_bytes": 0 if self.flushes_from_outside else self.device.flush_bytes,
            "cpu_threads": cpu_threads(),
            "gpu_memory_bytes": gpu_limit,
            # the problem's allow-list at run time (the baseline is the organizer's own code)
            "operator_rule": (operator_rule(language.name, self.spec.rules)
                              if role == "submission" else None),
            "packages": list(language.packages),
            "env": env,
            "cpus": sorted(self.contender_cpu_set) if self.contender_cpu_set else None,
            "file_size_bytes": self.file_size_mb * 2**20,
        }
        contender = Contender(role, warm.proc, warm.scratch, self.sandbox, jit=jit, warm=warm)
        if cache is not None:
            contender.jit_cache = (used, cache)
        if role == "submission":
            contender.idle_mb = self._idle_memory(warm)
        try:
            warm.proc.adjust(limits)
            warm.proc.send(protocol.request("config", config=config))
        except (OSError, ProtocolError) as exc:
            contender.close()
            raise ProblemRuntimeError(f"the {role}'s sandbox could not be set up: {exc}") from None
        # device memory is watched from here, outside the sandbox; over its limit the run dies
        contender.gpu_watch = GpuMemoryWatch.start(self.device, warm.proc.pids, gpu_limit,
                                                   warm.proc.kill)
        return contender

    def _idle_memory(self, warm: WarmHarness) -> float:
        """The harness's memory once torch is imported and before its config: what the
        submission's memory is counted from (its peak restarts here where the host allows)."""
        try:
            warm.await_warm(STARTUP_GRACE_S)
        except ProtocolError as exc:
            warm.proc.close()
            raise ProblemRuntimeError(f"the harness did not start: {exc}; "
                                      f"{warm.proc.log()[-2000:]}") from None
        return warm.proc.mark_memory()

    def _record_memory(self, sub: Contender) -> None:
        """What the submission used: device memory where the judge watches it (NVIDIA), else
        its process's growth over the idle harness."""
        if sub.gpu_watch is not None:
            self.result.memory_mb = round(sub.gpu_watch.peak_mb, 1)
            self.result.memory_measure = "device memory, peak"
        else:
            self.result.memory_mb = round(max(sub.proc.peak_memory_mb() - sub.idle_mb, 0.0), 1)
            self.result.memory_measure = "host memory, peak over the idle harness"

    def _await_ready(self, contender: Contender) -> None:
        """Wait for the harness, then for the source to load; failures close the process."""
        try:
            try:
                contender.warm.await_warm(STARTUP_GRACE_S)  # torch imported, if not yet seen
            except ProtocolError as exc:
                raise RunFailure(Verdict.SE, f"the harness did not start: {exc}; "
                                             f"{contender.proc.log()[-2000:]}") from None
            harness_up = contender.receive(STARTUP_GRACE_S)  # before any contestant code runs
            if harness_up.get("stage") != "harness":
                raise RunFailure(Verdict.SE, f"unexpected harness greeting {harness_up}")
            if contender.gpu_watch is not None:  # the context and the flush buffers are not
                contender.gpu_watch.mark()       # the submission's: counted from here
            contender.loaded = True
            try:
                contender.proc.send(protocol.request("begin"))
            except ProtocolError as exc:
                contender.proc.wait(2)
                raise contender.death(str(exc)) from None
            ready = contender.receive(STARTUP_GRACE_S + self.spec.limits.run_s)
        except ReplyTimeout:
            self._close(contender)
            raise RunFailure(Verdict.TLE, "loading the source did not finish in time") from None
        except RunFailure:
            self._close(contender)
            raise
        contender.versions = ready.get("versions", {})
        contender.setup = ready.get("device", {})

    def _close(self, contender: Contender) -> None:
        pids = contender.proc.pids() if self.device.kind == "cuda" else []
        contender.close()
        if pids and not await_gpu_release(self.device, pids):  # a hung kernel's context
            self.result.applied["gpu_released"] = False
            self.result.flags.append(f"the {contender.role}'s processes still held the GPU 10 s "
                                     "after they were killed: the next judging may share it")
        if contender.jit_cache is not None:  # the run is gone: what it built is kept
            jit_cache.keep(*contender.jit_cache)
            contender.jit_cache = None
        watch = contender.gpu_watch
        if watch is not None:
            self.result.applied.setdefault("gpu_memory", {})[contender.role] = {
                "peak_mb": watch.peak_mb,
                "limit_mb": None if watch.limit_bytes is None else watch.limit_bytes // 2**20}

    # -- correctness -----------------------------------------------------------------------
    def _report(self, test: TestPoint, verdict: Verdict | None, message: str = "",
                check: CheckReport | None = None) -> TestReport:
        report = TestReport(test.name, test.sample, verdict, message, params=dict(test.params))
        if check is not None:  # the checker's figures, under the same names in the record
            for key in CHECK_FIELDS:
                setattr(report, key, getattr(check, key))
            report.worst = [vars(w) for w in check.worst]
            report.message = message or check.message
        return report

    def _check_all(self, sub: Contender, tests: list[TestPoint],
                   cases: dict[str, list[TestCase]]) -> None:
        alive = True
        for test in tests:
            if not alive:
                self.result.tests.append(self._report(test, None, "not run"))
                continue
            try:
                check = self._check_test(sub, test, cases[test.name])
                verdict = Verdict.AC if check.passed else Verdict.WA
                self.result.tests.append(self._report(test, verdict, check=check))
            except RunFailure as failure:
                self.result.tests.append(self._report(test, failure.verdict, failure.message))
                alive = failure.verdict is Verdict.WA

    def _load(self, who: Contender, test: TestPoint, cases: list[TestCase],
              shared: dict | None = None) -> None:
        files = [self.sandbox.path(self.inputs_mount, test.name, f"{i}.pt")
                 for i in range(len(cases))]
        reply = who.request("load", STARTUP_GRACE_S, test=test.name, files=files,
                            outputs=cases[0].output_specs, shared=shared)
        if shared is not None and self.device.kind != "cpu":
            setup = self.result.applied.setdefault("timing_setup", {})
            setup["pinned_copies"] = setup.get("pinned_copies", True) and reply.get("pinned")

    def _warm(self, who: Contender, test: TestPoint) -> None:
        """On a GPU, Triton and TileLang compile at the first call of every new shape: that
        call, neither checked nor timed, may also take the compile time limit; every later call
        has the run limit alone."""
        if who.jit and test.name not in who.warmed:
            who.request("warm", self.spec.limits.compile_s + self.spec.limits.run_s, set=0)
            who.warmed.add(test.name)

    def _check_test(self, sub: Contender, test: TestPoint, cases: list[TestCase]) -> CheckReport:
        self._load(sub, test, cases)
        self._warm(sub, test)
        reports = []
        for index, case in enumerate(cases):
            reply = sub.request("run", self.spec.limits.run_s, set=index,
                                save=sub.out_path(test.name, f"check{index}.raw"))
            self.kernel_ms += reply.get("ms", 0.0)
            reports.append(self._compare(sub.host_out(test.name, f"check{index}.raw"), case,
                                         within=sub.scratch.host))
        return next((r for r in reports if not r.passed), reports[0])

    def _compare(self, path: Path, case: TestCase, within: str | None = None) -> CheckReport:
        """Check an output file (raw, see judge/harness/protocol.py) written by the sandboxed side
        (under `within`, its scratch directory) against the expected outputs."""
        outputs = {name: torch.empty(spec["shape"], dtype=getattr(torch, spec["dtype"]))
                   for name, spec in case.output_specs.items()}
        try:
            protocol.read_raw(str(path), [(t.data_ptr(), t.numel() * t.element_size())
                                          for t in outputs.values()], within=within)
        except (OSError, ValueError) as exc:  # missing, a link, truncated, padded
            raise RunFailure(Verdict.WA, f"the outputs were not written back as expected "
                                         f"({exc})") from None
        tol = self.spec.tolerance
        return check_outputs(self.checker, outputs, case.expected, case.inputs, rtol=tol.rtol,
                             atol=tol.atol, matched_ratio=tol.matched_ratio,
                             comparable=self._comparable)

    def _comparable(self, got: dict, expected: dict) -> tuple[dict, dict]:
        try:
            return (dequant.comparable(got, self.spec.signature),
                    dequant.comparable(expected, self.spec.signature))
        except ValueError as exc:  # the reference's scales do not fit its own outputs
            raise ProblemRuntimeError(f"the reference's scaled outputs: {exc}") from exc

    def _profile(self, sub: Contender, test: TestPoint) -> None:
        """One more call of the last checked point between cudaProfilerStart and Stop; the
        harness then exits, so that Nsight Compute writes its report and summary."""
        wanted = self.options.profile
        try:
            sub.request("profile", wanted.timeout_s, set=0)
            sub.proc.send(protocol.request("exit"))
            ended = sub.proc.wait(wanted.timeout_s)
        except (RunFailure, ProtocolError) as exc:
            self.result.profile = {"point": test.name, "tool": "ncu", "kernels": [],
                                   "note": f"the profiled call failed: {exc}"}
            return
        self.result.profile = profiling.collect(sub.scratch.host, wanted, test.name)
        if ended is None:
            self.result.profile["note"] = (f"Nsight Compute did not finish within "
                                           f"{wanted.timeout_s:g} s")

    # -- timing ----------------------------------------------------------------------------
    def _take_opinion(self) -> None:
        """KernelGuard's report into the record (waiting for its child if it still runs)."""
        if self.opinion is not None:
            report, self.opinion = self.opinion.report(), None
            self.result.guard = report.to_dict()
            self.result.flags += report.flags()
            self.result.holds += report.holds(self.source)

    def _time_all(self, sub: Contender, base: Contender, tests: list[TestPoint],
                  cases: dict[str, list[TestCase]]) -> None:
        before = gpu_state(self.device)
        self._await_idle_gpu(sub, base)
        self.throttled = throttle_meter(self.device)
        self.flusher = (CacheFlusher(self.device.flush_bytes, self.contender_cpus)
                        if self.flushes_from_outside else None)
        try:
            reports = {r.name: r for r in self.result.tests}
            # the largest first: a point's share of a total time is known from above once the
            # points that weigh most are timed (scoring.point_share)
            timed = sorted((t for t in tests if t.timed),
                           key=lambda t: -self._point_bytes(t, cases[t.name]))
            earlier = {"submission": 0.0, "baseline": 0.0}
            aggregate = self.spec.scoring.aggregate
            for index, test in enumerate(timed):
                # the first point is the heaviest: the others' time caps go with their weight
                # against it (its time per call is all `earlier` holds once it is timed)
                weight = functools.partial(scoring.point_weight, aggregate,
                                           heaviest_ms=dict(earlier)) if index else None
                try:
                    self._time_test(sub, base, test, cases[test.name], reports[test.name],
                                    functools.partial(scoring.point_share, aggregate, len(timed),
                                                      earlier_ms=dict(earlier)), earlier, weight)
                except RunFailure as failure:
                    if failure.verdict is Verdict.SE:
                        raise ProblemRuntimeError(failure.message) from None
                    report = reports[test.name]
                    report.verdict, report.message = failure.verdict, (
                        f"during the timing run: {failure.message}")
                    self.result.verdict = overall_verdict([t.verdict for t in self.result.tests
                                                           if t.verdict])
                    return
        finally:
            if self.flusher is not None:
                self.flusher.close()
            if before is not None:
                self.result.applied["gpu_state"] = {"before": before,
                                                    "after": gpu_state(self.device)}

    def _await_idle_gpu(self, sub: Contender, base: Contender, timeout_s: float = 5.0) -> None:
        """Before timing: no process but the judge's own may hold the GPU (a run killed just
        before, another program); wait a little for it to go, else say it shared the card."""
        own = {os.getpid(), *sub.proc.pids(), *base.proc.pids()}
        deadline = time.monotonic() + timeout_s
        while (foreign := foreign_gpu_processes(self.device, own)) and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        if foreign:
            self.result.applied["gpu_shared_with"] = foreign
            self.result.flags.append(f"processes {foreign} held the GPU while this judging "
                                     "timed its calls: its times may be slow")

    def _point_bytes(self, test: TestPoint, cases: list[TestCase]) -> int:
        """A call's inputs and outputs at `test`, in bytes."""
        return _set_bytes([(self.reference.input_shape(a, test), a.dtype)
                           for a in self.problem.inputs]) + _set_bytes(
            [(s["shape"], s["dtype"]) for s in cases[0].output_specs.values()])

    def _time_test(self, sub: Contender, base: Contender, test: TestPoint,
                   cases: list[TestCase], report: TestReport,
                   share: Callable[[dict[str, float]], float] | None = None,
                   earlier_ms: dict[str, float] | None = None,
                   weight: Callable[[dict[str, float]], float] | None = None) -> None:
        """Time one point; `share`: what it weighs in the score, `weight`: what it weighs against
        the heaviest point (see timing.interleave); its time per call is added to
        `earlier_ms`."""
        timing, run_s = self.timing, self.spec.limits.run_s
        if timing.max_s < self.spec.timing.max_s:
            self.result.applied["max_point_s"] = timing.max_s
        by_role = {"submission": sub, "baseline": base}
        cpu_meter = self._cpu_meter(by_role)
        folder = self.inputs_mount.host / test.name
        input_specs = [(self.reference.input_shape(a, test), a.dtype) for a in self.problem.inputs]
        output_bytes = _set_bytes([(s["shape"], s["dtype"])
                                   for s in cases[0].output_specs.values()])
        slots = timing_loop.batch_slots(max(_set_bytes(input_specs), output_bytes),
                                        self.device.kind)
        fresh_inputs = SharedTensors(folder / "fresh.raw", input_specs, writable_by_others=False,
                                     slots=slots)
        outputs = {}
        try:
            for role, who in by_role.items():
                outputs[role] = self._guard(who, lambda w=who: self._shared_outputs(
                    w, test, cases, slots), sub)
            shared = {role: {"inputs": self.sandbox.path(self.inputs_mount, test.name, "fresh.raw"),
                             "outputs": who.out_path(test.name, "fresh.raw"), "slots": slots}
                      for role, who in by_role.items()}
            for who in (sub, base):
                self._guard(who, lambda w=who: self._load(w, test, cases, shared[w.role]), sub)
                self._guard(who, lambda w=who: self._warm(w, test), sub)
                self._guard(who, lambda w=who: w.request(
                    "warmup", timing.warmup_s + 3 * run_s, seconds=timing.warmup_s,
                    min_calls=2), sub)

            def request(role: str, op: str, **fields) -> dict:
                who = by_role[role]
                return self._guard(who, lambda: who.request(op, run_s, **fields), sub)

            def freeze(role: str, frozen: bool) -> None:
                if not by_role[role].proc.freeze(frozen):
                    self.result.applied["frozen_between_turns"] = False

            def draw_inputs(index: int, slot: int) -> list:
                drawn = self.reference.inputs(test, self._round_seed(test, index, slot))
                return [drawn[a.name] for a in self.problem.inputs]

            self.result.applied.setdefault("frozen_between_turns", True)
            rounds = timing_loop.FreshRounds(
                draw_inputs, fresh_inputs.write_sets, outputs, self.workdir / "kept" / test.name,
                timing_loop.checked_calls(timing.checked_calls, output_bytes),
                self.contender_cpu_set, set_bytes=fresh_inputs.size)
            try:
                samples = timing_loop.interleave(
                    request, freeze, timing, rounds, self.flusher.flush if self.flusher else None,
                    cpu_meter, floor_loader=self.language.loader,
                    audit=operator_rule(self.language.name, self.spec.rules) is not None,
                    throttled=self.throttled, max_calls=slots, share=share,
                    weight=weight)
            except timing_loop.GpuThrottled as exc:
                raise DeviceNotReady(str(exc)) from None
        finally:
            for shared_file in (fresh_inputs, *outputs.values()):
                shared_file.close()
        for role, got in samples.items():
            self.kernel_ms += sum(got.reported)
            if earlier_ms is not None:
                earlier_ms[role] += timing_loop.per_call_ms(got)
        report.target_rse = timing_loop.point_target(samples, share, timing)
        report.time_cap_s = timing_loop.point_time_cap(samples, weight, timing)
        ratios = timing_loop.paired_ratios(samples["submission"], samples["baseline"])
        report.speedup_rse = scoring.relative_se(ratios) if ratios else None
        if samples["submission"].throttled:
            self.result.applied["throttled_rounds"] = (self.result.applied.get(
                "throttled_rounds", 0) + samples["submission"].throttled)
        counted = all(len(got.cpu) == len(got.reported) for got in samples.values())
        self.result.applied["cpu_time_charged"] = (
            self.result.applied.get("cpu_time_charged", True) and counted
            and cpu_meter is not None)
        self._check_rounds(test, rounds)
        floor = timing_loop.Floor.of(samples["baseline"])
        report.floor_ms = floor.empty_call_ms
        report.batch_calls = statistics.median(samples["submission"].calls)
        charge = timing_loop.charge(samples["submission"], samples["baseline"], floor)
        self._fill_timing(report, test, charge,
                          samples["submission"].stats(floor), samples["baseline"].stats(floor))

    @property
    def timing(self) -> Timing:
        """The problem's timing, its time per point capped by the deployment (`max_point_s`)."""
        timing, cap = self.spec.timing, settings().max_point_s
        return timing.model_copy(update={"max_s": cap}) if 0 < cap < timing.max_s else timing

    def _shared_outputs(self, who: Contender, test: TestPoint, cases: list[TestCase],
                        slots: int) -> SharedTensors:
        """A contender's timed outputs, in a file of its scratch directory that the judge maps."""
        path = who.host_out(test.name, "fresh.raw")
        who.proc.freeze(True)  # the run's own threads must not move things under the judge
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.parent.resolve().is_relative_to(Path(who.scratch.host).resolve()):
                raise OSError("a link leads out of it")
            path.unlink(missing_ok=True)  # whatever the run may have left there
            return SharedTensors(path, [(spec["shape"], spec["dtype"])
                                        for spec in cases[0].output_specs.values()],
                                 writable_by_others=True, slots=slots)
        except OSError as exc:
            raise RunFailure(Verdict.RE, f"the run's scratch directory could not hold its "
                                         f"outputs ({exc})") from None
        finally:
            who.proc.freeze(False)

    def _cpu_meter(self, by_role: dict[str, Contender]):
        """Each contender's CPU time, where a turn's CPU time is its work: on the CPU device
        with one CPU per contender (more would count a parallel call several times over)."""
        if (self.device.kind != "cpu" or self.contender_cpu_set is None
                or len(self.contender_cpu_set) != 1):
            return None
        return lambda role: by_role[role].proc.cpu_ns()

    def _round_seed(self, test: TestPoint, index: int, slot: int) -> int:
        return derive_seed(self.secret, test.name, f"timed{index}.{slot}")

    def _check_rounds(self, test: TestPoint, rounds: timing_loop.FreshRounds) -> None:
        """Check the outputs of each contender's kept calls (drawn once the calls were over);
        large ones on every CPU at once (the contenders wait; small ones pay more in threads
        than they gain: 0.13 ms a check alone, 0.34 ms on two threads for a 15-float softmax;
        `python bench/round_cost.py` measures a check at every point)."""
        def check_call(kept: tuple[int, int, Path]) -> CheckReport:
            index, slot, path = kept
            inputs = self.reference.inputs(test, self._round_seed(test, index, slot))
            return self._compare(path, TestCase(inputs, self.reference.expected(test, inputs),
                                                self.reference.output_specs(test)))

        parallel = rounds.outputs["submission"].size >= PARALLEL_CHECK_BYTES
        checks = timing_loop.cpu_pool()[0].map if parallel else map
        for role in ("baseline", "submission"):
            kept = rounds.kept(role)
            for (index, slot, _), check in zip(kept, checks(check_call, kept)):
                if check.passed:
                    continue
                if role == "baseline":
                    raise RunFailure(Verdict.SE, f"the baseline is wrong on {test.name}, timed "
                                                 f"round {index + 1}: {check.message}")
                suspect = (index, slot) in rounds.suspects[role]
                raise RunFailure(Verdict.WA, f"the outputs of a timed call (round {index + 1}, "
                                             f"call {slot + 1} of its batch"
                                             f"{', one that looked skipped' if suspect else ''}; "
                                             f"{len(kept)} of {rounds.seen[role]} calls were "
                                             f"checked: a random draw and any whose outputs "
                                             f"looked skipped) differ from the reference: "
                                             f"{check.message}")

    def _guard(self, who: Contender, call, sub: Contender | None = None):
        """Failures of the baseline are the judge's problem (SE), never the contestant's, unless
        the submission holds more device memory than its limit (then the baseline's failure to
        allocate is the submission's MLE)."""
        try:
            return call()
        except RunFailure as failure:
            if who.role != "baseline":
                raise
            if sub is not None and sub.gpu_memory_exceeded():
                sub.proc.kill()
                raise sub.death("the baseline could not run beside it") from None
            raise RunFailure(Verdict.SE, f"baseline failed: {failure.message}") from None

    def roofline_ms(self, test: TestPoint) -> float | None:
        """The least time the problem's declared bytes and flops take at the device's peaks
        (None where neither is known)."""
        metrics, least = self.spec.metrics, []
        if metrics.bytes is not None and self.device.peak_gbps:
            least.append(float(exprs.evaluate(metrics.bytes, test.params))
                         / (self.device.peak_gbps * 1e9))
        peak = self.device.peak_tflops_for(metrics.precision) if metrics.flops else None
        if peak:
            least.append(float(exprs.evaluate(metrics.flops, test.params)) / (peak * 1e12))
        return 1000 * max(least) if least else None

    def _least(self, report: TestReport, test: TestPoint) -> tuple[str | None, float]:
        """The physical bound of a call's time at this point, and its name: the empty call's
        floor (measured beside it) or the roofline, the higher."""
        bounds = {"the empty call's floor": report.floor_ms,
                  "the roofline": self.roofline_ms(test)}
        return max(((k, v) for k, v in bounds.items() if v), key=lambda kv: kv[1],
                   default=(None, 0.0))

    def _physical(self, report: TestReport, test: TestPoint, ms: float) -> tuple[float, float]:
        """No point below physics: a time under the bound (`_least`) is charged at it, and held
        for review when clearly under the roofline. Under the empty call's floor it is only
        charged: the judge's clock is no forgery, and at a tiny point, where an honest call costs
        about the empty call, its noise put an honest loop.cpp 12 % under the floor in one
        judging of four (the report under the floor is what holds: `_fill_timing`). Returns
        the time charged and the bound."""
        name, least = self._least(report, test)
        if ms >= least:
            return ms, least
        if not name.endswith("floor") and ms < (1 - timing_loop.PHYSICS_MARGIN) * least:
            self._hold("roofline", test,
                       f"{ms:.4f} ms per call is under {name} ({least:.4f} ms): charged at it")
        return least, least

    def _hold(self, by: str, test: TestPoint, what: str) -> None:
        """A flag that holds the result off the boards until an organizer clears it."""
        self.result.flags.append(f"{test.name}: {what}")
        self.result.holds.append({"by": by, "what": what, "test": test.name, "line": None})

    def _fill_timing(self, report: TestReport, test: TestPoint, charge: timing_loop.Charge,
                     sub: scoring.Stats, base: scoring.Stats) -> None:
        ms, least = self._physical(report, test, charge.ms)
        # the baseline's time is held to the same bound: where both calls cost about the
        # empty call (tiny points), the clock's noise put the submission's under it and not the
        # baseline's as often as not, and its speedup fell to 0.3-0.8 for the baseline's own code
        report.time_ms, report.baseline_ms = ms, max(base.median, least)
        report.speedup = scoring.speedup(report.baseline_ms, ms)
        # a report short of the clock (a forged timer): by a significant excess, or below what an
        # empty call reports (which no call can be: the clock's noise cannot hide that one)
        under_floor = bool(report.floor_ms) and (
            charge.reported_ms < REPORT_FLOOR_FRACTION * report.floor_ms)
        # against what is charged (`ms`: the floor where the clock, less the harness's work
        # around each call, left a tiny call less than it; a report under that floor is short)
        if (charge.forged or under_floor) and ms > (1 + FLAGGED_EXCESS) * charge.reported_ms:
            what = (f"charged {ms - charge.reported_ms:.4f} ms per call more than the "
                    f"{charge.reported_ms:.4f} ms reported (the judge's clock or the run's CPU "
                    "time saw it outside the measured call, or it is under the empty call's)")
            beyond_baseline = charge.time_excess_ms + charge.ms - charge.clock_ms
            if under_floor or beyond_baseline > HELD_EXCESS * charge.ms:
                self._hold("clock", test, what)
            else:
                self.result.flags.append(f"{test.name}: {what}")
        report.rel_spread, report.rse, report.baseline_rse = sub.iqr_rel, sub.rse, base.rse
        report.reported_ms = charge.reported_ms
        report.clock_excess_ms = charge.time_excess_ms
        report.prepare_excess_ms = charge.prepare_excess_ms if self.device.kind != "cpu" else None
        report.samples = sub.n
        seconds = ms / 1000
        metrics = self.spec.metrics
        if metrics.bytes is not None and seconds > 0:
            report.gbps = float(exprs.evaluate(metrics.bytes, test.params)) / seconds / 1e9
            if self.device.peak_gbps:
                report.peak_bandwidth_fraction = report.gbps / self.device.peak_gbps
        if metrics.flops is not None and seconds > 0:
            report.tflops = float(exprs.evaluate(metrics.flops, test.params)) / seconds / 1e12
            peak = self.device.peak_tflops_for(metrics.precision)
            if peak:
                report.peak_flops_fraction = report.tflops / peak
        if report.speedup > IMPLAUSIBLE_SPEEDUP:
            self.result.flags.append(f"{test.name}: speedup {report.speedup:.1f}x is "
                                     f"implausibly high; check by hand")

    # -- score -----------------------------------------------------------------------------
    def _score(self) -> None:
        timed = [t for t in self.result.tests if t.time_ms is not None]
        if not timed:
            return
        subs, bases = [t.time_ms for t in timed], [t.baseline_ms for t in timed]
        self.result.time_ms, self.result.baseline_ms = sum(subs), sum(bases)
        if self.result.verdict is not Verdict.AC:
            return
        # each point's target, not the spread it showed: a run that made one point's times
        # noisy on purpose would otherwise widen the allowance of another's
        errors = [t.target_rse for t in timed]
        counted, lowered = scoring.counted_times(bases, subs, errors)
        if lowered is not None:
            timed[lowered].counted_speedup = scoring.speedup(bases[lowered], counted[lowered])
        speedup = scoring.aggregate(self.spec.scoring.aggregate, bases, subs, errors)
        self.result.speedup = speedup
        self.result.score = scoring.score(self.spec.scoring.score, speedup) if math.isfinite(
            speedup) else 0.0


def _set_bytes(specs: list[tuple[list[int], str]]) -> int:
    """The bytes a set of tensors of `specs` spans in a shared file (protocol.set_layout)."""
    return protocol.set_layout([math.prod(shape) * getattr(torch, dtype).itemsize
                                for shape, dtype in specs])[1]


def judge_source(problem: Problem, source: str, *, language: str | Language | None = None,
                 filename: str = "submission", device: DeviceInfo, sandbox: Sandbox,
                 options: JudgeOptions | None = None) -> JudgeResult:
    """Judge one source against a problem. Raises SubmissionRejected (judge/judging/admission.py)
    on bad input, NotRunnable once a source that cannot run on this device has compiled."""
    admission = admit(Terms.of(problem), language, source, device.kind, filename=filename,
                      compile_check=True)
    return JudgingRun(problem, source, admission, device, sandbox, options or JudgeOptions()).run()
