"""Profile one call (a profile judging, under Nsight Compute: judge/judging/profiling.py): the
last checked point once more between cudaProfilerStart and Stop, then the harness exits so
that the profiler writes its report and summary. Trusted code."""

from __future__ import annotations

from judge.harness import protocol
from judge.judging import profiling
from judge.judging.contender import Contender
from judge.judging.context import Judging, RunFailure
from judge.problem.schema import TestPoint
from sandbox import ProtocolError


def profile(j: Judging, sub: Contender, test: TestPoint) -> None:
    wanted = j.options.profile
    try:
        sub.request("profile", wanted.timeout_s, set=0)
        sub.proc.send(protocol.request("exit"))
        ended = sub.proc.wait(wanted.timeout_s)
    except (RunFailure, ProtocolError) as exc:
        j.result.profile = {"point": test.name, "tool": "ncu", "kernels": [],
                            "note": f"the profiled call failed: {exc}"}
        return
    j.result.profile = profiling.collect(sub.scratch.host, wanted, test.name)
    if ended is None:
        j.result.profile["note"] = f"Nsight Compute did not finish within {wanted.timeout_s:g} s"
