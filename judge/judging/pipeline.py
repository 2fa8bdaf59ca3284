"""One judging, end to end: rules, compile, start the contenders, check every test point, time
against the baseline, score (the stages: judge/judging/stages/). Trusted code: contestant code
only ever runs inside a sandboxed harness process.

Overall verdict: the first non-AC test point's verdict in test order (SPEC §4). After a WA the
remaining test points still run (the process is healthy); after RE, TLE, MLE or OLE they are not
run. Timing happens only when every test point is AC.
"""

from __future__ import annotations

import contextlib
import math
import time

import torch

import judge
from checkers import get_checker
from judge.host.device import DeviceInfo
from judge.host.telemetry import unusable_compute_mode
from judge.judging.admission import Admission, SubmissionRejected, Terms, admit
from judge.judging.contender import Contender
from judge.judging.context import DeviceNotReady, JudgeOptions, Judging, NotRunnable, RunFailure
from judge.judging.guard import GuardRun
from judge.judging.record import JudgeResult
from judge.judging.reference import ProblemRuntimeError, Reference
from judge.judging.rules import check_rules
from judge.judging.stages import check, profile, score, start, timed
from judge.languages import Language
from judge.problem.schema import Problem, TestPoint
from judge.verdicts import State, Verdict, overall_verdict
from sandbox import Sandbox

__all__ = ["DeviceNotReady", "JudgeOptions", "JudgingRun", "NotRunnable", "judge_source"]


class JudgingRun:
    """One judging of one source, in this process: the stages in order over its state."""

    def __init__(self, problem: Problem, source: str, admission: Admission, device: DeviceInfo,
                 sandbox: Sandbox, options: JudgeOptions):
        language = admission.language
        self.admission = admission
        result = JudgeResult(problem.slug, problem.version, language.name)
        self.j = j = Judging(problem, source, language, device, sandbox, options, result)
        result.applied = {
            "device": device.torch_name, "device_kind": device.kind, "device_model": device.model,
            "sandbox": sandbox.name,
            "toolchain": language.toolchain_version(sandbox), "judge": judge.__version__,
        }
        if j.contender_cpus is not None:
            result.applied["contender_cpus"] = j.contender_cpus
        if sandbox.trusted_code_only:
            result.flags.append("judged in the trusted sandbox, which isolates nothing: "
                                "the judge's own self-test code only")
        elif not sandbox.isolates_filesystem:
            result.flags.append(f"judged in the {sandbox.name} sandbox, which isolates "
                                "neither files nor network: not for untrusted code")

    @property
    def secret(self) -> int:
        return self.j.secret

    def run(self) -> JudgeResult:
        j, started = self.j, time.monotonic()
        # an extra opinion on Python sources, formed while the sandbox starts and the outputs
        # are checked: flags, no verdict; taken before timing, so that it never shares a CPU
        # with a timed call
        self.opinion = GuardRun(j.source) if j.language.is_python else None
        try:
            why = unusable_compute_mode(j.device)
            if why:
                raise DeviceNotReady(why)
            self._run()
        except ProblemRuntimeError as exc:
            j.result.verdict, j.result.message = Verdict.SE, f"problem error: {exc}"
        except DeviceNotReady as exc:
            j.result.verdict, j.result.message = Verdict.SE, f"device not ready: {exc}"
        finally:
            if j.slot is not None:
                j.slot.close()  # its processes, and the job directory with them
            self._take_opinion()
            j.result.wall_s = time.monotonic() - started
            j.result.kernel_s = j.kernel_ms / 1000
        return j.result

    def _run(self) -> None:
        """Rules, compile; then the stages over the contenders."""
        j = self.j
        violation = check_rules(j.source, j.language.name, j.spec.rules)
        if violation:
            j.result.verdict, j.result.message = Verdict.RV, str(violation)
            return
        with j.phase("sandbox_start"):
            j.slot = start.take_slot(j)  # started ahead: they warm up while this compiles
        j.progress(State.COMPILING)
        with j.phase("compile"):
            compiled = start.compile_source(j, j.language, j.source)
        j.result.compile_log = compiled.log
        j.result.applied["compile_cached"] = compiled.cached
        if not compiled.ok:
            j.result.verdict = Verdict.CE
            j.result.message = "compilation failed" + (" (time limit)" if compiled.timed_out
                                                       else "")
            return
        if not self.admission.runnable:
            raise NotRunnable(self.admission.why_not)
        tests = self._selected_tests()
        j.progress(State.RUNNING)
        self._prepare(tests)
        self._contend(tests, compiled.artifact)
        score.score(j)

    def _selected_tests(self) -> list[TestPoint]:
        j = self.j
        tests = j.problem.tests_for(j.device.kind)
        if j.options.tests is not None:
            tests = [t for t in tests if t.name in j.options.tests]
        if not tests:
            raise SubmissionRejected(f"problem {j.problem.slug} has no test point for the "
                                     f"{j.device.kind} device")
        return tests

    def _prepare(self, tests: list[TestPoint]) -> None:
        """The checker, the reference, and the largest file a run may write."""
        j = self.j
        try:
            j.checker = get_checker(j.spec.checker.name, j.problem.path)
        except Exception as exc:
            raise ProblemRuntimeError(f"checker {j.spec.checker.name} failed to load: "
                                      f"{exc}") from exc
        j.reference = Reference(j.problem, j.device.torch_name)
        # outputs are the only files a run writes: a disk-filling submission dies at this size
        largest = max(math.prod(spec["shape"]) * getattr(torch, spec["dtype"]).itemsize
                      for t in tests for spec in j.reference.output_specs(t).values())
        j.file_size_mb = max(64, math.ceil(4 * largest / 2**20))

    def _contend(self, tests: list[TestPoint], artifact) -> None:
        """Start the contenders, check every point, profile or time; close them."""
        j = self.j
        # The baseline loads first: it takes its device memory before any contestant code runs
        # (a submission hogging the GPU cannot make the judge fail), and loads while the
        # reference computes the expected outputs.
        with j.phase("sandbox_start"):
            baseline = start.spawn_baseline(j) if j.options.timing else None
            if baseline is None and "baseline" in j.slot.harnesses:  # started ahead of this
                j.slot.harnesses["baseline"].proc.close()  # untimed judging: not needed
        submission = None
        try:
            with j.phase("reference"):
                cases = {t.name: check.cases(j, t) for t in tests}
            submission = self._start_submission(baseline, tests, artifact)
            if submission is None:
                return
            with j.phase("correctness"):
                check.check_all(j, submission, tests, cases)
            j.result.verdict = overall_verdict([t.verdict for t in j.result.tests if t.verdict])
            if j.result.verdict is Verdict.AC and j.options.profile is not None:
                with j.phase("profile"):
                    profile.profile(j, submission, tests[-1])
            if j.result.verdict is Verdict.AC and baseline is not None:
                self._take_opinion()
                with j.phase("timing"), self._quiet():
                    timed.time_all(j, submission, baseline, tests, cases)
        finally:
            if submission is not None:
                start.record_memory(j, submission)
            for who in (submission, baseline):
                if who is not None:
                    start.close(j, who)

    def _start_submission(self, baseline: Contender | None, tests: list[TestPoint],
                          artifact) -> Contender | None:
        """The baseline loaded, then the submission; None when the submission failed to."""
        j = self.j
        with j.phase("sandbox_start"):
            if baseline is not None:
                try:
                    start.await_ready(j, baseline)
                except RunFailure as failure:
                    raise ProblemRuntimeError(
                        f"the baseline failed to load: {failure.message}") from None
            try:
                submission = start.start(j, "submission", j.language, artifact)
            except RunFailure as failure:
                j.result.verdict, j.result.message = failure.verdict, failure.message
                j.result.tests = [check.report(t, None) for t in tests]
                return None
        j.result.applied["versions"] = submission.versions
        j.result.applied["timing_setup"] = submission.setup
        if j.flushes_from_outside:
            j.result.applied["timing_setup"].update(
                flush_bytes=j.device.flush_bytes,
                flush_by="a process of the judge on the contenders' CPUs")
        return submission

    def _quiet(self):
        """While timing: the worker's next slot, warming up, is frozen."""
        pool = self.j.options.pool
        return pool.quiet() if pool else contextlib.nullcontext()

    def _take_opinion(self) -> None:
        """KernelGuard's report into the record (waiting for its child if it still runs)."""
        if self.opinion is not None:
            report, self.opinion = self.opinion.report(), None
            result = self.j.result
            result.guard = report.to_dict()
            result.flags += report.flags()
            result.holds += report.holds(self.j.source)


def judge_source(problem: Problem, source: str, *, language: str | Language | None = None,
                 filename: str = "submission", device: DeviceInfo, sandbox: Sandbox,
                 options: JudgeOptions | None = None) -> JudgeResult:
    """Judge one source against a problem. Raises SubmissionRejected (judge/judging/admission.py)
    on bad input, NotRunnable once a source that cannot run on this device has compiled."""
    admission = admit(Terms.of(problem), language, source, device.kind, filename=filename,
                      compile_check=True)
    return JudgingRun(problem, source, admission, device, sandbox, options or JudgeOptions()).run()
