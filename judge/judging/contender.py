"""One harness process of a judging (the submission's or the baseline's): its requests, and every
way it can fail turned into a verdict. Trusted code; the process it talks to is not."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from judge.harness import protocol
from judge.host.telemetry import GpuMemoryWatch
from judge.judging.context import RunFailure
from judge.judging.warm import WarmHarness
from judge.verdicts import Verdict
from sandbox import Mount, ProtocolError, ReplyTimeout, Sandbox, SandboxProcess


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
    loader: str = "python"  # how its run_kernel is loaded and called (Language.loader)

    def out_path(self, *parts: str) -> str:
        return self.sandbox.path(self.scratch, "out", *parts)

    def host_out(self, *parts: str) -> Path:
        return Path(self.scratch.host, "out", *parts)

    def request(self, op: str, timeout: float, turn: bool = False,
                during: Callable[[], object] | None = None, **fields) -> dict:
        """Send a request; turn every way the process can fail into a verdict. With `turn`,
        the run is thawed for the request alone (SandboxProcess.send); `during` runs between
        sending it and awaiting the reply (a timed turn's releases)."""
        message = protocol.request(op, **fields)
        try:
            self.proc.send(message, turn)
        except ProtocolError as exc:
            self.proc.wait(2)
            raise self.death(str(exc)) from None
        if during is not None:
            during()
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


def guard(who: Contender, call, sub: Contender | None = None):
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
