"""What the stages of one judging share (judge/judging/pipeline.py runs them in order): the
problem and source, the device and sandbox, the options, the secret seed, the warm slot its
harnesses come from, and the record being filled. Trusted code."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.host.device import DeviceInfo
from judge.judging import profiling
from judge.judging.record import JudgeResult
from judge.judging.reference import Reference
from judge.judging.warm import Slot, SlotPool, contender_cpus
from judge.languages import Language
from judge.problem.schema import Problem, ProblemSpec
from judge.verdicts import State, Verdict
from sandbox import Mount, Sandbox
from sandbox.base import parse_cpus

STARTUP_GRACE_S = 90.0  # interpreter, torch and language package imports


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


class NotRunnable(ValueError):
    """The language cannot run on this device; route it to a worker that can."""


class DeviceNotReady(Exception):
    """The device is not in a state a judging can run in (its compute mode, a card that
    throttles every call): a system error, never the contestant's."""


class RunFailure(Exception):
    """A contender's request ended in a verdict (its process died, timed out, answered wrong)."""

    def __init__(self, verdict: Verdict, message: str):
        super().__init__(message)
        self.verdict = verdict
        self.message = message


@dataclass
class Judging:
    """One judging's shared state; each stage reads what it needs and adds to `result`."""

    problem: Problem
    source: str
    language: Language
    device: DeviceInfo
    sandbox: Sandbox
    options: JudgeOptions
    result: JudgeResult
    secret: int = field(init=False)
    contender_cpus: str | None = field(init=False)  # the CPUs both contenders run on
    contender_cpu_set: set[int] | None = field(init=False)
    slot: Slot | None = None  # taken once the rules pass: its processes serve this judging only
    checker: Any = None  # the problem's special judge (checkers/)
    reference: Reference | None = None
    file_size_mb: int = 64  # the largest file a run may write: 4x its largest output
    kernel_ms: float = 0.0  # time reported inside run_kernel, every call together

    def __post_init__(self) -> None:
        seed = self.options.seed
        self.secret = seed if seed is not None else secrets.randbits(63)
        self.contender_cpus = contender_cpus(self.device)
        self.contender_cpu_set = parse_cpus(self.contender_cpus) if self.contender_cpus else None

    @property
    def spec(self) -> ProblemSpec:
        return self.problem.spec

    @property
    def workdir(self) -> Path:
        return self.slot.workdir

    @property
    def inputs_mount(self) -> Mount:
        return self.slot.inputs

    @property
    def flushes_from_outside(self) -> bool:
        """On the CPU device the judge flushes the cache itself (judge/measure/flusher.py); a GPU's
        cache is flushed by the harness, on the device, inside `prepare`."""
        return self.device.kind == "cpu"

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the wall time of the block to the phase `name` of the record."""
        started = time.monotonic()
        try:
            yield
        finally:
            phases = self.result.phases
            phases[name] = phases.get(name, 0.0) + time.monotonic() - started

    def progress(self, state: State) -> None:
        if self.options.on_state:
            self.options.on_state(state)
