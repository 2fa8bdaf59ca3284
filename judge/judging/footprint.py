"""What a judging keeps in its work folder at its fullest, from a problem's shapes alone.

Trusted side. A worker keeps its judgings' folders in /dev/shm when that has room
(warm.work_root): a container's /dev/shm is 64 MB unless given more, and a judging that does not
fit there falls back to disk, whose write-back can land under a timed call. deploy/compose.yaml's
workers are given room for every bundled problem's (tests/test_deploy.py checks).
"""

from __future__ import annotations

import math

import torch

from judge.harness import protocol
from judge.measure import fresh_rounds
from judge.measure.rounds import batch_slots
from judge.problem import exprs
from judge.problem.schema import Arg, Problem, TestPoint


def work_folder_bytes(problem: Problem, device_kind: str) -> int:
    """An upper estimate, in bytes, for one judging of `problem` on `device_kind` ("cpu",
    "cuda", ...): every point's checked input sets and both contenders' outputs of them (saved
    before timing, kept to the end), and, while the point that needs most is timed, each
    contender's shared outputs file, the timed calls it keeps for checking and the suspects,
    and the inputs file where sets are written rather than mapped (mapped sets are memfds, which
    the folder does not hold)."""
    tests = problem.tests_for(device_kind)
    spec = problem.spec.timing
    saved = sum((spec.input_sets if t.timed else 1)
                * (_bytes(problem.inputs, t) + 2 * _bytes(problem.outputs, t)) for t in tests)
    timing = max((_timing_bytes(problem, t, device_kind) for t in tests if t.timed), default=0)
    return saved + timing


def _timing_bytes(problem: Problem, test: TestPoint, device_kind: str) -> int:
    inputs, outputs = _bytes(problem.inputs, test), _bytes(problem.outputs, test)
    slots = batch_slots(max(inputs, outputs), device_kind)
    out_stride, in_stride = protocol.slot_stride(outputs), protocol.slot_stride(inputs)
    written = 0 if protocol.released_by_mapping(in_stride) else slots * in_stride
    kept = sum(fresh_rounds.checked_calls(problem.spec.timing.checked_calls, outputs).values())
    return 2 * (slots * out_stride + written) + (kept + fresh_rounds.MAX_SUSPECTS) * outputs


def _bytes(args: list[Arg], test: TestPoint) -> int:
    """A set of `args` at `test`, as laid out in a shared file."""
    return protocol.set_layout([
        math.prod(int(exprs.evaluate(s, test.params)) for s in a.shape)
        * getattr(torch, a.dtype).itemsize for a in args])[1]
