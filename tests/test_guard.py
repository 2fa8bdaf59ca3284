"""KernelGuard's opinion: never against an honest template or AC self-test, a flag and a
review mark on known hacks, and never the verdict (the judge's measurements decide)."""

import pytest

from judge.judging import guard
from judge.judging.guard import GuardRun
from judge.judging.pipeline import JudgeOptions, judge_source
from judge.problem.schema import problem_folders
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS, ROOT

FOLDERS = [*problem_folders(PROBLEMS), *problem_folders(ROOT / "tests" / "problems"),
           ROOT / "judge" / "problem" / "template"]
HONEST = [f for folder in FOLDERS
          for f in [*sorted((folder / "templates").glob("*.py")),
                    *sorted((folder / "solutions" / "AC").glob("*.py"))]]

# a harmless timer swap on the CPU (the harness times with its own clock there), flagged
TIMER_SWAP = '''import torch


class FakeEvent:
    def __init__(self, *args, **kwargs):
        pass

    def record(self, *args):
        pass

    def elapsed_time(self, other):
        return 0.001


torch.cuda.Event = FakeEvent


def run_kernel(a, b, c, n):
    c.copy_(a + b)
'''
# the first answer for an input address, replayed: fresh inputs at the same address catch it
POINTER_REPLAY = '''_cache = {}


def run_kernel(a, b, c, n):
    key = a.data_ptr()
    if key in _cache:
        c.copy_(_cache[key])
        return _cache[key]
    out = a + b
    _cache[key] = out
    c.copy_(out)
    return out
'''


def test_the_harness_names_are_read_from_its_files():
    modules, functions = guard.harness_names()
    assert {"main", "protocol"} <= set(modules)
    assert {"poison", "time_call", "modified_inputs", "read_raw", "Harness"} <= set(functions)


@pytest.mark.parametrize("path", HONEST, ids=lambda p: "/".join(p.parts[-3:]))
def test_no_honest_template_or_accepted_self_test_is_sent_to_review(path):
    report = GuardRun(path.read_text()).report()
    assert not report.error, report.error
    assert not report.review, report.hits


@pytest.mark.parametrize("source,rule,verdict", [
    (TIMER_SWAP, "TIMER_MONKEYPATCH", Verdict.AC),
    (POINTER_REPLAY, "POINTER_REPLAY", Verdict.WA),
], ids=["timer_swap", "pointer_replay"])
def test_a_known_hack_is_flagged_for_review_and_judged_by_measurement(vector_add, cpu,
                                                                       default_sandbox, source,
                                                                       rule, verdict):
    result = judge_source(vector_add, source, device=cpu, sandbox=default_sandbox,
                          options=JudgeOptions(), language="torch")
    assert result.verdict is verdict, result.message  # the detector changed nothing
    assert result.needs_review and result.guard["review"]
    assert rule in {hit["rule"] for hit in result.guard["hits"] if hit["tier"] == "hard"}
    assert any(f.startswith("kernelguard") and rule in f and "review" in f
               for f in result.flags)
    # held off the boards, each hit where the source shows it (KernelGuard gives no line)
    lines = source.splitlines()
    where = {h["line"]: h["what"] for h in result.holds if h["what"].startswith(rule)}
    assert where and all(line and lines[line - 1].strip() for line in where), where
    if rule == "TIMER_MONKEYPATCH":  # the fake class, or where it replaces torch's
        assert all("Event" in lines[line - 1] for line in where), where


def test_native_sources_get_no_opinion(vector_add, cpu, default_sandbox):
    source = (PROBLEMS / "vector_add/solutions/AC/loop.cpp").read_text()
    result = judge_source(vector_add, source, device=cpu, sandbox=default_sandbox,
                          options=JudgeOptions(timing=False), language="cpp")
    assert result.verdict is Verdict.AC and result.guard == {} and not result.needs_review


def test_a_detector_that_fails_leaves_a_flag_and_the_verdict(vector_add, cpu, default_sandbox,
                                                             monkeypatch):
    monkeypatch.setattr(guard, "TIMEOUT_S", 0.001)
    source = (PROBLEMS / "vector_add/templates/torch.py").read_text()
    result = judge_source(vector_add, source, device=cpu, sandbox=default_sandbox,
                          options=JudgeOptions(timing=False), language="torch")
    assert result.verdict is Verdict.AC and not result.needs_review
    assert "timed out" in result.guard["error"]
    assert any("no opinion" in f for f in result.flags)




def test_the_opinion_never_parses_beside_the_judgings_own_parsing(monkeypatch):
    """CPython 3.11's parser is not safe in two threads at once, and the judging parses the
    source (rules, the language's check) right after the opinion starts: a clean-clone run lost
    an opinion so ("AST constructor recursion depth mismatch" in the opinion's thread). All the
    parsing the opinion needs in this process happens in the caller's thread."""
    import ast
    import threading

    parse, threads = ast.parse, set()

    def recording(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return parse(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", recording)
    guard.harness_names.cache_clear()
    report = GuardRun((PROBLEMS / "fp8_gemm/templates/triton.py").read_text()).report()
    assert not report.error and threads == {threading.current_thread().name}


def test_the_opinion_is_in_before_any_call_is_timed(vector_add, cpu, default_sandbox,
                                                     monkeypatch):
    """Its child must not share a CPU with a timed call: the report is taken before timing."""
    import time

    from judge.judging import pipeline
    from judge.judging.stages import timed

    events = []

    class Recorded(GuardRun):
        def report(self):
            events.append(("opinion", time.monotonic()))
            return super().report()

    timing = timed.time_all

    def recorded_timing(*args):
        events.append(("timing", time.monotonic()))
        return timing(*args)

    monkeypatch.setattr(pipeline, "GuardRun", Recorded)
    monkeypatch.setattr(timed, "time_all", recorded_timing)
    source = (PROBLEMS / "vector_add/templates/torch.py").read_text()
    result = judge_source(vector_add, source, device=cpu, sandbox=default_sandbox,
                          options=JudgeOptions(), language="torch")
    assert result.verdict is Verdict.AC and result.guard["tool"].startswith("kernelguard")
    assert [name for name, _ in events] == ["opinion", "timing"]
