"""Profile judgings: the harness under Nsight Compute (a stand-in here, tests/standins/ncu; the
real one in the GPU self-test), one checked point's call profiled, the summary parsed into the
record and the report kept; files the run could have planted are read without links."""

from __future__ import annotations

import os
import shutil

import pytest

from judge.judging import profiling
from judge.judging.pipeline import JudgeOptions, judge_source
from judge.problem.schema import load_problem
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS, ROOT

STANDIN = ROOT / "tests" / "standins" / "ncu"
LOG = """==PROF== Connected to process 7
"ID","Kernel Name","Invocations","Section Name","Metric Name","Metric Unit","Minimum","Maximum","Average"
"0","add","1","GPU Speed Of Light Throughput","Duration","usecond","2.1","2.1","2.1"
"0","add","1","GPU Speed Of Light Throughput","Memory Throughput","%","80","80","80"
==PROF== Report: x.ncu-rep
"""


def test_the_summary_is_read_from_ncus_log_whatever_surrounds_it():
    rows = profiling.summary(LOG)
    assert [(r["Kernel Name"], r["Metric Name"], r["Average"]) for r in rows] == [
        ("add", "Duration", "2.1"), ("add", "Memory Throughput", "80")]
    assert profiling.summary("no summary here\n") == []


def test_the_wrapper_turns_profiling_on_only_for_the_profiled_call():
    argv = profiling.wrapper("/opt/ncu", "/kj/scratch")
    assert argv[:3] == ["/opt/ncu", "--profile-from-start", "off"]
    assert "/kj/scratch/profile" in argv and "/kj/scratch/ncu.log" in argv


def test_planted_files_are_not_followed_nor_read_whole(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("organizer's")
    (tmp_path / "link").symlink_to(secret)
    assert profiling.read_file(tmp_path / "link", 100) is None
    (tmp_path / "big").write_bytes(b"x" * 101)
    assert profiling.read_file(tmp_path / "big", 100) is None
    assert profiling.read_file(tmp_path / "secret", 100) == b"organizer's"
    os.mkfifo(tmp_path / "fifo")  # left by the run: opening it must not wait for a writer
    assert profiling.read_file(tmp_path / "fifo", 100) is None


def test_the_profilers_folders_are_never_where_the_problems_are(tmp_path):
    problems = tmp_path / "problems" / "vector_add"
    problems.mkdir(parents=True)
    assert profiling.folders(str(STANDIN), problems) == [STANDIN.parent]
    with pytest.raises(ValueError, match="holds the problem's files"):
        profiling.folders(str(tmp_path / "ncu"), problems)  # beside the problems' root
    with pytest.raises(ValueError, match="holds the problem's files"):
        profiling.folders("/ncu", problems)  # at the root: everything


@pytest.mark.skipif(not shutil.which("bwrap"), reason="bubblewrap is not installed")
def test_a_profile_judging_runs_the_harness_under_the_profiler_in_the_sandbox(tmp_path, cpu):
    from sandbox.bwrap import BwrapSandbox

    sandbox = BwrapSandbox()  # the profiler's folders are shown by the judging itself
    problem = load_problem(PROBLEMS / "vector_add")
    source = (PROBLEMS / "vector_add/solutions/AC/loop.cpp").read_text()
    wanted = profiling.Profiling(ncu=str(STANDIN), out_dir=tmp_path / "out", timeout_s=60)
    result = judge_source(problem, source, language="cpp", device=cpu, sandbox=sandbox,
                          options=JudgeOptions(timing=False, tests=["tiny"], profile=wanted))
    assert result.verdict is Verdict.AC, result.message
    assert result.profile["point"] == "tiny" and result.profile["report"] == profiling.REPORT
    assert [(k["Metric Name"], k["Average"]) for k in result.profile["kernels"]][0] == (
        "Duration", "2.11")
    report = (tmp_path / "out" / profiling.REPORT).read_bytes()
    assert report.startswith(b"NCU-STAND-IN --profile-from-start off")
    assert result.profile["report_bytes"] == len(report) and "profile" in result.phases
    assert os.listdir(tmp_path / "out") == [profiling.REPORT]
