"""Every verdict through the real toolchains and sandboxes on this machine."""

import shutil

import pytest

from judge.judging import report
from judge.judging.admission import SubmissionRejected
from judge.judging.pipeline import JudgeOptions, NotRunnable, judge_source
from judge.problem.schema import load_problem
from judge.settings import settings
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS, ROOT

VA = PROBLEMS / "vector_add"
FAST = JudgeOptions(timing=False)


def judge(problem, file_or_source, device, sandbox, options=FAST, **kw):
    if file_or_source.startswith("solutions/"):
        source, kw["filename"] = (VA / file_or_source).read_text(), file_or_source
    else:
        source = file_or_source
    return judge_source(problem, source, device=device, sandbox=sandbox, options=options, **kw)


@pytest.mark.parametrize("file,verdict", [
    ("solutions/AC/loop.cpp", Verdict.AC),
    ("solutions/WA/off_by_one.cpp", Verdict.WA),
    ("solutions/CE/missing_semicolon.cpp", Verdict.CE),
    ("solutions/RE/null_write.cpp", Verdict.RE),
])
def test_cpp_verdicts_under_each_backend(vector_add, cpu, sandbox, file, verdict):
    result = judge(vector_add, file, cpu, sandbox)
    assert result.verdict is verdict, result.message
    assert result.applied["sandbox"] == sandbox.name


@pytest.mark.quiet
def test_accepted_submission_is_timed_against_the_baseline(vector_add, cpu, default_sandbox,
                                                           monkeypatch):
    import os

    from judge.judging.contender import Contender
    from judge.judging.warm import contender_cpus
    from sandbox.base import parse_cpus

    # every timed request is made from off the contenders' CPUs, its thaw included: a judge
    # thread left there is preempted by the run it thaws and releases its next call late
    # (Release.off_contender)
    timed_from, request = [], Contender.request

    def recorded(self, op, *args, **fields):
        if op == "time":
            timed_from.append(os.sched_getaffinity(0))
        return request(self, op, *args, **fields)

    monkeypatch.setattr(Contender, "request", recorded)
    result = judge(vector_add, "solutions/AC/loop.cpp", cpu, default_sandbox, JudgeOptions())
    theirs = parse_cpus(contender_cpus(cpu))
    if os.sched_getaffinity(0) - theirs:  # a host with a CPU of the judge's own
        assert timed_from and not any(cpus & theirs for cpus in timed_from)
    assert result.verdict is Verdict.AC and result.score > 0 and result.speedup > 0
    for t in result.tests:
        assert t.verdict is Verdict.AC and t.matched_ratio == 1.0
        assert t.time_ms > 0 and t.baseline_ms > 0 and t.samples >= 5
        assert t.speedup == pytest.approx(t.baseline_ms / t.time_ms)
        assert t.gbps > 0 and t.tflops > 0
        assert t.floor_ms > 0  # an empty run_kernel, timed the same way
    largest = max(result.tests, key=lambda t: t.params["n"])
    assert largest.floor_ms < 0.5 * largest.time_ms, (largest.floor_ms, largest.time_ms)
    assert "floor_us" in report.table(result)
    phases = result.phases  # where the wall time went, for organizers
    assert set(phases) == {"compile", "sandbox_start", "reference", "correctness", "timing"}
    assert all(s >= 0 for s in phases.values()) and sum(phases.values()) <= result.wall_s
    assert 0 < result.overhead_s < result.wall_s and "judge overhead" in report.table(result)
    assert result.time_ms == pytest.approx(sum(t.time_ms for t in result.tests))
    # each point says whether the harness's own work fits in the judge's resolution of its
    # calls (charging.Floor); the score counts those that do, or where none does, every point
    # at no better than the baseline's time (stages/score.py)
    assert all(t.harness_ms > 0 and t.resolvable_from_ms > 0 for t in result.tests)
    assert not next(t for t in result.tests if t.name == "tiny").resolvable
    assert "not resolvable" in report.table(result)
    resolved = [t for t in result.tests if t.resolvable] or result.tests
    counted = [t.baseline_ms / (t.counted_speedup or t.speedup) for t in resolved]
    assert result.speedup == pytest.approx(sum(t.baseline_ms for t in resolved)
                                           / sum(counted))  # total_time
    # timed to what each point weighs in the total time: the largest to the problem's target,
    # tiny (a hundredth of it or less) to ten times that (scoring.point_target)
    target = vector_add.spec.timing.target_rse
    assert largest.target_rse == target
    assert next(t for t in result.tests if t.name == "tiny").target_rse > 5 * target
    assert all(t.speedup_rse is not None for t in result.tests)
    # and capped in time alike: the largest at the problem's max_s (as the deployment caps
    # it), the others at their weight of it (scoring.point_time_cap)
    assert largest.time_cap_s == min(vector_add.spec.timing.max_s, settings().max_point_s)
    assert all(t.time_cap_s < largest.time_cap_s for t in result.tests if t is not largest)
    assert result.score == pytest.approx(100 * result.speedup)
    # what the submission used, not the harness's interpreter and torch (~1 GB)
    assert 0 <= result.memory_mb < 200 and "over the idle harness" in result.memory_measure


def test_wrong_answer_reports_every_test_point(vector_add, cpu, default_sandbox):
    result = judge(vector_add, "solutions/WA/off_by_one.cpp", cpu, default_sandbox)
    assert result.score == 0 and result.speedup is None
    tiny = result.tests[0]
    assert tiny.verdict is Verdict.WA and tiny.mismatches == 1 and tiny.worst[0]["index"] == [6]
    assert tiny.nan_count == 1  # the unwritten element still holds the poison
    assert all(t.verdict is Verdict.WA for t in result.tests)


def test_time_limit_stops_the_judging(vector_add, cpu, default_sandbox):
    result = judge(vector_add, "solutions/TLE/spin.cpp", cpu, default_sandbox)
    assert result.verdict is Verdict.TLE
    assert result.tests[0].verdict is Verdict.TLE and result.tests[1].verdict is None


def test_rule_violation_is_found_before_compiling(vector_add, cpu, default_sandbox):
    result = judge(vector_add, "solutions/RV/torch_add.py", cpu, default_sandbox)
    assert result.verdict is Verdict.RV and "line 6" in result.message and not result.tests


def test_triton_through_the_interpreter(vector_add, cpu, default_sandbox):
    assert judge(vector_add, "solutions/AC/triton_add.py", cpu, default_sandbox).verdict is Verdict.AC
    assert judge(vector_add, "solutions/WA/subtract.py", cpu, default_sandbox).verdict is Verdict.WA
    result = judge(vector_add, "solutions/RE/raises.py", cpu, default_sandbox)
    assert result.verdict is Verdict.RE and "this kernel gives up" in result.tests[0].message


def test_plain_torch_submission(vector_add, cpu, default_sandbox):
    source = (VA / "baseline.py").read_text()
    result = judge(vector_add, source, cpu, default_sandbox, filename="mine.py")
    assert result.verdict is Verdict.AC and result.language == "torch"


def test_tilelang_c_target(vector_add, cpu, default_sandbox):
    result = judge(vector_add, "solutions/AC/tilelang_add.py", cpu, default_sandbox)
    assert result.verdict is Verdict.AC, result.tests[0].message


def test_unwritten_output_fails(vector_add, cpu, default_sandbox):
    source = 'extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {}'
    result = judge(vector_add, source, cpu, default_sandbox, language="cpp")
    assert result.verdict is Verdict.WA and result.tests[0].nan_count == result.tests[0].total


def test_modifying_inputs_is_wrong(vector_add, cpu, default_sandbox):
    source = ('extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {\n'
              '  for (int i = 0; i < n; ++i) { c[i] = a[i] + b[i]; ((float*)a)[i] = 0; } }')
    result = judge(vector_add, source, cpu, default_sandbox, language="cpp")
    assert result.verdict is Verdict.WA and "modified its input" in result.tests[0].message


@pytest.mark.quiet
def test_caching_outputs_across_calls_fails_the_timing_check(vector_add, cpu, default_sandbox):
    """Computes once per test point, then returns the first answer: fresh inputs catch it."""
    source = ('#include <vector>\nstatic int calls = 0; static std::vector<float> saved;\n'
              'static int saved_n = -1;\n'
              'extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {\n'
              '  if (saved_n != n) { saved_n = n; calls = 0; saved.resize(n); }\n'
              '  if (calls++ < 4) for (int i = 0; i < n; ++i) saved[i] = a[i] + b[i];\n'
              '  for (int i = 0; i < n; ++i) c[i] = saved[i]; }')
    result = judge(vector_add, source, cpu, default_sandbox, JudgeOptions(), language="cpp")
    assert result.verdict is Verdict.WA
    assert "outputs of a timed call" in next(t for t in result.tests
                                           if t.verdict is Verdict.WA).message


def test_seeds_are_fresh_per_judging_and_reproducible_when_given(vector_add, cpu):
    from judge.judging.admission import Terms, admit
    from judge.judging.pipeline import JudgingRun
    from sandbox import get_sandbox

    admitted = admit(Terms.of(vector_add), "cpp", "x", "cpu")
    make = lambda seed: JudgingRun(vector_add, "", admitted, cpu, get_sandbox("process"),  # noqa: E731
                                   JudgeOptions(seed=seed))
    assert make(None).secret != make(None).secret
    assert make(5).secret == 5


def test_rejected_requests(vector_add, cpu, default_sandbox):
    with pytest.raises(SubmissionRejected, match="not allowed"):
        judge(vector_add, "x", cpu, default_sandbox, language="maca")
    with pytest.raises(SubmissionRejected, match="limit"):
        judge(vector_add, "x" * 300_000, cpu, default_sandbox, language="cpp")
    with pytest.raises(NotRunnable, match="cuda"):
        judge(vector_add, (VA / "templates/cuda.cu").read_text(), cpu, default_sandbox,
              language="cuda")


def test_cuda_compile_error_is_reported_even_without_a_gpu(vector_add, cpu, default_sandbox):
    result = judge(vector_add, "solutions/CE/syntax_error.cu", cpu, default_sandbox)
    assert result.verdict is Verdict.CE and "error" in result.compile_log


def test_output_flood_is_ole_and_memory_bomb_is_mle(vector_add, cpu, default_sandbox, tmp_path):
    flood = ('#include <cstdio>\nextern "C" void run_kernel(const float* a, const float* b, '
             'float* c, int n) { for (;;) printf("spam spam spam spam\\n"); }')
    assert judge(vector_add, flood, cpu, default_sandbox, language="cpp").verdict is Verdict.OLE
    bomb = ('#include <cstdlib>\n#include <cstring>\nextern "C" void run_kernel(const float* a, '
            'const float* b, float* c, int n) { for (;;) { void* p = malloc(1 << 28); '
            'if (p) memset(p, 1, 1 << 28); } }')
    small = tmp_path / "vector_add"
    shutil.copytree(VA, small)
    spec = small / "problem.yaml"
    spec.write_text(spec.read_text().replace("memory_mb: 4096", "memory_mb: 700"))
    result = judge(load_problem(small), bomb, cpu, default_sandbox, language="cpp")
    assert result.verdict is Verdict.MLE, result.tests[0].message
    assert result.memory_mb > 100  # the bomb's growth up to the limit, torch aside


def test_custom_checker_from_the_problem_folder(cpu, default_sandbox, tmp_path):
    folder = tmp_path / "vector_add"
    shutil.copytree(VA, folder)
    (folder / "sum_checker.py").write_text(
        "from checkers.report import CheckReport\n\n"
        "def check(out, ref, *, rtol, atol, matched_ratio):\n"
        "    ok = out is not None and abs(float(out.sum()) - float(ref.sum())) <= 1e-2 * ref.numel()\n"
        "    return CheckReport(ok, matched_ratio=1.0 if ok else 0.0, total=ref.numel(),\n"
        "                       message='sums agree' if ok else 'sums differ')\n")
    spec = folder / "problem.yaml"
    spec.write_text(spec.read_text().replace("checker: allclose", "checker: sum_checker.py"))
    problem = load_problem(folder)
    ok = judge(problem, "solutions/AC/loop.cpp", cpu, default_sandbox)
    assert ok.verdict is Verdict.AC and ok.tests[0].message == "sums agree"
    reversed_ = ('extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {\n'
                 '  for (int i = 0; i < n; ++i) c[n - 1 - i] = a[i] + b[i]; }')
    assert judge(problem, reversed_, cpu, default_sandbox, language="cpp").verdict is Verdict.AC
    assert judge(problem, "solutions/WA/subtract.py", cpu, default_sandbox).verdict is Verdict.WA


def test_broken_reference_is_a_system_error_not_the_contestants(cpu, default_sandbox, tmp_path):
    folder = tmp_path / "vector_add"
    shutil.copytree(VA, folder)
    (folder / "reference.py").write_text((folder / "reference.py").read_text().replace(
        'return {"c": a + b}', 'return {"c": (a + b)[:-1]}'))
    result = judge(load_problem(folder), "solutions/AC/loop.cpp", cpu, default_sandbox)
    assert result.verdict is Verdict.SE and "problem.yaml declares" in result.message
    assert result.score == 0


SLOW_ADD = """import time
import torch

def spin(seconds):  # busy: a compute-bound slow kernel (a sleeping one wakes up cold)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass

def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
    spin(0.002)
"""

FORGED_TIMER = """import sys, time
import torch

_harness = sys.modules["__main__"]
_real = _harness.Device.time_call


def _fake(self, fn, *args):
    return 0.3 * _real(self, fn, *args)  # report 30 % of every call


_harness.Device.time_call = _fake
_real_batch = _harness.Device.time_batch
_harness.Device.time_batch = lambda self, k, b, *g: [0.3 * ms for ms in _real_batch(self, k, b, *g)]
""" + SLOW_ADD.split("import torch\n", 1)[1]

COUNT_TO = """import threading
import torch

STEPS = 60_000  # ~2 ms of interpreter work here; the same count for the cheat and the control


def count_to(n):  # work, not a wall-clock deadline (which would pass while the run is frozen)
    for _ in range(n):
        pass
"""

COUNTED_ADD = COUNT_TO + """

def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
    count_to(STEPS)
"""

MOVED_AFTER_RETURN = COUNT_TO + """
work, done = threading.Semaphore(0), threading.Semaphore(0)
pending = []


def spin():  # the slow part of every call, done once the call has returned
    while True:
        work.acquire()
        count_to(STEPS)
        done.release()


threading.Thread(target=spin, daemon=True).start()


def run_kernel(a, b, c, n):
    if pending:  # the last call's slow part must be over (a pipeline: one call in flight)
        done.acquire()
    torch.add(a, b, out=c)
    work.release()
    pending.append(1)
"""


@pytest.mark.quiet
def test_a_lowered_report_is_charged_by_the_judges_clock(vector_add, cpu, default_sandbox):
    """The harness shares the contestant's process: its report can be lowered. The judge's
    clock charges what it saw, and a report far under it is flagged."""
    honest = judge(vector_add, SLOW_ADD, cpu, default_sandbox, JudgeOptions(), language="torch")
    result = judge(vector_add, FORGED_TIMER, cpu, default_sandbox, JudgeOptions(),
                   language="torch")
    again = judge(vector_add, SLOW_ADD, cpu, default_sandbox, JudgeOptions(), language="torch")
    assert honest.verdict is Verdict.AC and result.verdict is Verdict.AC
    # a shared 2-core host's speed drifts by ~20 % from one judging to the next: the honest run's
    # judging of the two around the cheat's is what it is held to (the faster one)
    for cheat, *controls in zip(result.tests, honest.tests, again.tests):
        control = min(t.time_ms for t in controls)
        assert cheat.time_ms >= 0.85 * control >= 0.4, (cheat.time_ms, control)
    # the speedups also carry the two judgings' baselines, which differ by up to ~30 % here,
    # and which points resolve (a 2 ms kernel's tiny point decides where one drops out)
    assert result.speedup <= 1.5 * max(honest.speedup, again.speedup), [
        (t.name, t.time_ms, t.baseline_ms, t.resolvable) for r in (honest, result, again)
        for t in r.tests]
    assert any("charged" in flag for flag in result.flags), result.flags


# FORGED_TIMER's forgery in one timing of a point only: a report short of the clock that a
# second timing of the point does not reproduce, as a busy host's noise once made of an honest one
FORGED_IN_ONE_TIMING = """import sys, time
import torch

_harness = sys.modules["__main__"]
_timings = [0]  # the points loaded for timing (a load with the judge's shared files)
_real_load = _harness.Harness.op_load


def _load(self, msg):
    _timings[0] += bool(msg.get("shared"))
    return _real_load(self, msg)


def _share():
    return 0.3 if _timings[0] == 1 else 1.0


_harness.Harness.op_load = _load
_real_call = _harness.Device.time_call
_harness.Device.time_call = lambda self, fn, *args: _share() * _real_call(self, fn, *args)
_real_batch = _harness.Device.time_batch
_harness.Device.time_batch = lambda self, k, b, *g: [_share() * ms for ms in _real_batch(self, k, b, *g)]
""" + SLOW_ADD.split("import torch\n", 1)[1]


@pytest.mark.quiet
def test_a_clock_hold_stands_only_where_a_second_timing_repeats_it(vector_add, cpu,
                                                                   default_sandbox):
    """A report short of the clock at a point is timed a second time before it holds the
    result: short again (a forged timer), it holds and says so; not short (the host's noise,
    here a forgery in the first timing only), it is a flag. The time charged is the first
    timing's either way. (KernelGuard holds both sources too, for their patching of the
    harness: only the clock's holds are read here.)"""
    def clock_holds(result):
        return [hold["what"] for hold in result.holds if hold["by"] == "clock"]

    forged = judge(vector_add, FORGED_TIMER, cpu, default_sandbox, JudgeOptions(),
                   language="torch")
    assert any("held again when the point was timed a second time" in what
               for what in clock_holds(forged)), forged.holds
    once = judge(vector_add, FORGED_IN_ONE_TIMING, cpu, default_sandbox, JudgeOptions(),
                 language="torch")
    assert once.verdict is Verdict.AC and not clock_holds(once), once.holds
    heaviest = max(once.tests, key=lambda t: t.params["n"])
    assert any(flag.startswith(f"{heaviest.name}: charged") for flag in once.flags), once.flags
    assert any("was not short when the point was timed a second time" in flag
               for flag in once.flags), once.flags
    # charged as the first timing measured it: its clock, far beyond the forged report
    assert heaviest.time_ms >= 2 * heaviest.reported_ms, (heaviest.time_ms,
                                                          heaviest.reported_ms)


@pytest.mark.quiet
def test_work_left_to_a_thread_after_the_reply_is_charged(cpu, default_sandbox, tmp_path):
    """MOVED_AFTER_RETURN leaves each call's slow part to a thread (one call in flight, so that
    its outputs are right): a turn's last part runs after the reply. The run is thawed only
    from the request's writing to the kernel's freeze after the reply, and the CPU time it got
    after the reply is charged. The problem's baseline here does the same work in its calls
    (COUNTED_ADD): the paired ratio, which the host's speed cancels out of, is what the deferral
    gains. A turn holds 16 calls at the small points, 2 at the large one, where a run that
    could finish the last call's part between turns would be ~1.35x its baseline (at 16 calls
    a turn the last part is a sixteenth of the work). The score and that point are held to
    1.12; the light points are timed to what they weigh (ten rounds here, 0.9-1.3x from one
    judging to the next while their hidden CPU time was charged in each: not a bound to hold
    one point to). A host busy with other work spreads one judging's ratios too: the honest
    COUNTED_ADD itself judged against its own copy read 0.73-1.41x at the large point with two
    CPU hogs beside it. So a judging over the bound is judged once more and the test fails when
    both are: the deferral's ~1.35x is over it in every judging, a busy host's in one of many."""
    folder = tmp_path / "vector_add"
    shutil.copytree(VA, folder)
    (folder / "baseline.py").write_text(COUNTED_ADD)
    seen = []
    for _ in range(2):
        result = judge(load_problem(folder), MOVED_AFTER_RETURN, cpu, default_sandbox,
                       JudgeOptions(), language="torch")
        assert result.verdict is Verdict.AC, result.verdict
        largest = max(result.tests, key=lambda t: t.params["n"])
        seen.append((result.speedup, largest.speedup, largest.speedup_rse))
        if result.speedup < 1.12 and largest.speedup < 1.12:
            return
    pytest.fail(f"the deferral gained in two judgings (score, largest point, its rse): {seen}")


@pytest.mark.quiet
def test_an_honest_slow_submission_is_charged_about_what_it_reports(vector_add, cpu,
                                                                     default_sandbox):
    """The judge's clock may charge an honest submission a little (two processes' requests differ
    by tens of microseconds), never enough for a flag (10 %)."""
    result = judge(vector_add, SLOW_ADD, cpu, default_sandbox, JudgeOptions(), language="torch")
    assert result.verdict is Verdict.AC and not result.flags, result.flags
    assert all(t.time_ms >= 2 for t in result.tests)


def test_a_forged_system_error_is_the_submissions_runtime_error(vector_add, cpu, default_sandbox):
    """SE is never scored as a loss, so a submission must not be able to claim one."""
    source = """import gc
import torch


def run_kernel(a, b, c, n):
    channel = next(o for o in gc.get_objects() if type(o).__name__ == "Channel")
    channel.reply(ok=False, kind="SE", error="forged")
"""
    result = judge(vector_add, source, cpu, default_sandbox, language="torch")
    assert result.verdict is Verdict.RE


def test_judging_without_isolation_is_flagged(vector_add, cpu):
    from sandbox import get_sandbox

    result = judge(vector_add, "solutions/AC/loop.cpp", cpu, get_sandbox("process"))
    assert result.verdict is Verdict.AC
    assert any("isolates neither" in flag for flag in result.flags)


JIT_FIRST_CALL = """
import time
compiled = set()

def run_kernel(a, b, c, n):
    if n not in compiled:  # a JIT compiling for a new shape
        time.sleep({compile_s})
        compiled.add(n)
    time.sleep({run_s})
    c.copy_(a + b)
"""


def test_the_compile_grace_of_jit_languages_covers_compiling_only(cpu, default_sandbox, tmp_path):
    """A JIT language (Triton, TileLang on a GPU) may compile at the first call of each shape
    within compile_s; every call, the first included, still runs within run_s."""
    from judge.languages.torch import Torch

    class JitTorch(Torch):  # a JIT language on this CPU, as Triton is on a GPU
        jit_devices = ("cpu",)

    folder = tmp_path / "vector_add"
    shutil.copytree(VA, folder)
    spec = folder / "problem.yaml"
    spec.write_text(spec.read_text().replace("compile_s: 60, run_s: 3", "compile_s: 8, run_s: 1")
                    .replace("input_sets: 2", "input_sets: 1"))
    problem = load_problem(folder)
    options = JudgeOptions(timing=False, tests=["tiny"])
    compiles = judge(problem, JIT_FIRST_CALL.format(compile_s=2.5, run_s=0), cpu,
                     default_sandbox, options, language=JitTorch())
    assert compiles.verdict is Verdict.AC, compiles.message
    slow = judge(problem, JIT_FIRST_CALL.format(compile_s=0, run_s=1.5), cpu, default_sandbox,
                 options, language=JitTorch())
    assert slow.verdict is Verdict.TLE, slow.to_dict()


def test_tilelang_on_the_cpu_compiles_at_the_first_call_within_the_compile_grace(
        cpu, default_sandbox, tmp_path):
    """TileLang's `c` target compiles each shape at its first call too (a C compiler run through
    TVM: seconds, more on a loaded host): that call has the compile grace, as on a GPU. Without
    it the bundled TileLang AC was judged TLE beside other tests ("no result within 3 s")."""
    from judge.languages import get_language

    folder = tmp_path / "vector_add"
    shutil.copytree(VA, folder)
    spec = folder / "problem.yaml"
    text = spec.read_text().partition("rules:")[0]  # a stand-in kernel: torch does its adding
    spec.write_text(text.replace("compile_s: 60, run_s: 3", "compile_s: 8, run_s: 1")
                    .replace("input_sets: 2", "input_sets: 1"))
    options = JudgeOptions(timing=False, tests=["tiny"])
    result = judge(load_problem(folder), "import tilelang\n" + JIT_FIRST_CALL.format(
        compile_s=2.5, run_s=0), cpu, default_sandbox, options, language=get_language("tilelang"))
    assert result.verdict is Verdict.AC, result.message or result.tests[0].message


def test_a_deployment_caps_the_seconds_a_point_is_timed(vector_add, monkeypatch):
    """`KJUDGE_MAX_POINT_S` bounds each point's timing below the problem's own `max_s` (never
    above it); the record says when it applied."""
    from judge.judging.stages.timed import effective_timing

    for cap, expected in (("0", 3.0), ("0.5", 0.5), ("10", 3.0)):
        monkeypatch.setenv("KJUDGE_MAX_POINT_S", cap)
        assert effective_timing(vector_add.spec).max_s == expected
        assert effective_timing(vector_add.spec).max_reps == vector_add.spec.timing.max_reps


SHARED_STATE_REFERENCE = '''import time

import torch

_SCRATCH = {}  # state shared between calls, as a module whose weights are swapped in for each


def make_inputs(params, generator, device):
    n = params["n"]
    return {"a": torch.randn(n, generator=generator, device=device),
            "b": torch.randn(n, generator=generator, device=device)}


def reference(a, b, n):
    _SCRATCH["c"] = a + b
    time.sleep(0.005)  # another thread's call writes the scratch meanwhile
    return {"c": _SCRATCH["c"].clone()}
'''


def test_a_reference_sharing_state_between_threads_fails_no_correct_run(cpu, default_sandbox,
                                                                       tmp_path):
    """The judge checks a large point's kept calls on every CPU at once: a reference that
    shares state between its calls (an imported KernelBench model, whose weights
    functional_call swaps in) computed one call's outputs from another's inputs, and a correct
    baseline was SE ('the baseline is wrong ... timed round 30', one judging in two). A failed
    check counts only once the check alone agrees; validate names the reference."""
    from judge.tooling.selftest import thread_outcomes

    folder = tmp_path / "shared_state"
    shutil.copytree(ROOT / "tests" / "problems" / "quick_add", folder)
    (folder / "reference.py").write_text(SHARED_STATE_REFERENCE)
    yaml = folder / "problem.yaml"
    yaml.write_text(yaml.read_text().split("tests:")[0]  # one timed point of 256 KiB outputs
                    + "tests:\n  - {name: wide, params: {n: 65536}, sample: true}\n")
    problem = load_problem(folder)
    result = judge(problem, (folder / "baseline.py").read_text(), cpu, default_sandbox,
                   options=JudgeOptions(), language="torch")
    assert result.verdict is Verdict.AC, result.message
    wrong = judge(problem, (folder / "baseline.py").read_text().replace("a, b, out", "a, -b, out"),
                  cpu, default_sandbox, options=JudgeOptions(), language="torch")
    assert wrong.verdict is Verdict.WA, wrong.message
    [outcome] = thread_outcomes(problem, cpu)
    assert outcome.status == "FAIL" and "shares state between calls" in outcome.detail
    (folder / "reference.py").write_text(
        (ROOT / "tests" / "problems" / "quick_add" / "reference.py").read_text())
    [outcome] = thread_outcomes(load_problem(folder), cpu)
    assert outcome.status == "ok", outcome.detail
