"""Verdicts and judging states (SPEC §4)."""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    AC = "AC"  # accepted
    WA = "WA"  # wrong answer: the checker rejected a test point
    CE = "CE"  # compile error
    RE = "RE"  # runtime error: crash, non-zero exit, CUDA error, exception
    TLE = "TLE"  # a call of run_kernel ran past the time limit
    MLE = "MLE"  # memory limit
    OLE = "OLE"  # output (stdout/stderr) limit
    RV = "RV"  # rule violation, found before compiling
    SE = "SE"  # system/judge error: never the contestant's fault, never scored

    def __str__(self) -> str:
        return self.value


class State(str, Enum):
    QUEUED = "QUEUED"
    COMPILING = "COMPILING"
    RUNNING = "RUNNING"
    DONE = "DONE"


def overall_verdict(test_verdicts: list[Verdict]) -> Verdict:
    """The first non-AC test point's verdict, in test order; AC when all pass (SPEC §4)."""
    return next((v for v in test_verdicts if v is not Verdict.AC), Verdict.AC)


# A submission's mode: only ranked ones count on boards; benchmark ones are judged and timed;
# test ones are judged on their sample points only, correctness only (no timing); profile ones
# (where a contest allows them, on an NVIDIA GPU) run one sample point's call under Nsight
# Compute (judge/judging/profiling.py)
RANKED, BENCHMARK, TEST, PROFILE = SUBMISSION_MODES = ("ranked", "benchmark", "test", "profile")
