"""Start the contenders: the warm slot the harnesses come from, the compiled artifact, each
harness's limits and config, its greeting and the loading of the source; and closing them.
Trusted code: the harnesses run the contestant's code (and the baseline) in the sandbox."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from judge.harness import protocol
from judge.host.telemetry import GpuMemoryWatch, await_gpu_release
from judge.judging import jit_cache, profiling
from judge.judging.contender import Contender
from judge.judging.context import STARTUP_GRACE_S, Judging, RunFailure
from judge.judging.reference import ProblemRuntimeError
from judge.judging.rules import operator_rule
from judge.judging.warm import ROLES, UNTIMED, Slot, WarmHarness, cpu_threads, startup_env
from judge.languages import Language, infer_language
from judge.verdicts import Verdict
from sandbox import ProtocolError, ReplyTimeout, SandboxLimits

# Host memory a JIT compile may add to a harness (TileLang: TVM's lowering and nvcc, ~0.5 GB
# each for the bundled templates, bench/tilelang_jit_memory.py), on top of the problem's limit.
JIT_COMPILER_MB = 2048
# Device memory of a submission's process when the problem sets none: the baseline, started
# first, and the judge's own reference share the rest.
DEFAULT_GPU_MEMORY_SHARE = 0.4


def take_slot(j: Judging) -> Slot:
    """The slot whose harnesses serve this judging (the submission's, and the baseline's where
    it is timed): its own under a profiler, the one started ahead for it, the worker pool's
    next, else one started now."""
    env = startup_env(j.sandbox, j.device)
    options = j.options
    roles = ROLES if options.timing else UNTIMED
    if options.profile is not None:  # a harness of its own, under the profiler
        ncu = options.profile.ncu
        try:
            shown = profiling.folders(ncu, keep_out=j.problem.path)
        except ValueError as exc:
            raise ProblemRuntimeError(str(exc)) from None
        slot = Slot.start(j.sandbox, env, ahead=False, shown=shown,
                          wrap=functools.partial(profiling.wrapper, ncu))
    elif options.slot is not None and options.slot.serves(env, roles) and not options.slot.taken:
        slot, options.slot.taken = options.slot, True
    elif options.pool is not None:
        slot = options.pool.take(env, roles)
    else:
        slot = Slot.start(j.sandbox, env, ahead=False, roles=roles)
    j.result.applied["warm_start"] = slot.ahead
    return slot


def compile_source(j: Judging, language: Language, source: str):
    limits = SandboxLimits(memory_mb=max(j.spec.limits.memory_mb, 4096), pids=512,
                           output_bytes=256 * 1024)
    return language.compile(source, j.device, j.sandbox, limits, j.spec.limits.compile_s)


def start(j: Judging, role: str, language: Language, artifact: Path) -> Contender:
    contender = spawn(j, role, language, artifact, j.source)
    await_ready(j, contender)
    return contender


def spawn_baseline(j: Judging) -> Contender:
    path = j.problem.path / j.spec.baseline
    source = path.read_text()
    language = infer_language(path, source)
    compiled = compile_source(j, language, source)
    if not compiled.ok:
        raise ProblemRuntimeError(f"the baseline does not compile:\n{compiled.log}")
    j.result.applied["baseline_language"] = language.name
    return spawn(j, "baseline", language, compiled.artifact, source)


def gpu_memory_limit_bytes(j: Judging) -> int | None:
    """The submission's device memory: the problem's limit, else a share of the device's."""
    if j.device.kind == "cpu":
        return None
    if j.spec.limits.gpu_memory_mb is not None:
        return j.spec.limits.gpu_memory_mb * 2**20
    if j.device.memory_bytes:
        return int(DEFAULT_GPU_MEMORY_SHARE * j.device.memory_bytes)
    return None


def spawn(j: Judging, role: str, language: Language, artifact: Path, source: str) -> Contender:
    """Hand the slot's harness for `role` its artifact, limits and config (not waiting for
    it to load); a JIT's cache from earlier judgings of this very source (judge/judging/jit_cache.py)."""
    warm = j.slot.harnesses[role]
    env = language.runtime_env(j.device, j.sandbox)
    cache = None
    if language.jit_cache_env:
        cache = jit_cache.entry(language, source, j.device, j.sandbox)
        used = jit_cache.restore(cache, warm.scratch.host)
        env |= {name: j.sandbox.path(warm.scratch, used.name) for name in language.jit_cache_env}
    shutil.copy2(artifact, warm.sub.host / artifact.name)
    gpu_limit = gpu_memory_limit_bytes(j) if role == "submission" else None
    jit = j.device.kind in language.jit_devices
    # a JIT compiles inside this process tree (TileLang runs nvcc): room for the compiler
    memory_mb = j.spec.limits.memory_mb + (JIT_COMPILER_MB if jit else 0)
    limits = SandboxLimits(memory_mb=memory_mb, output_bytes=j.spec.limits.output_kb * 1024,
                           file_size_mb=j.file_size_mb, cpus=j.contender_cpus)
    config = _config(j, role, language, j.sandbox.path(warm.sub, artifact.name), env, gpu_limit)
    contender = Contender(role, warm.proc, warm.scratch, j.sandbox, jit=jit, warm=warm,
                          loader=language.loader)
    if cache is not None:
        contender.jit_cache = (used, cache)
    if role == "submission":
        contender.idle_mb = _idle_memory(warm)
    try:
        warm.proc.adjust(limits)
        warm.proc.send(protocol.request("config", config=config))
    except (OSError, ProtocolError) as exc:
        contender.close()
        raise ProblemRuntimeError(f"the {role}'s sandbox could not be set up: {exc}") from None
    # device memory is watched from here, outside the sandbox; over its limit the run dies
    contender.gpu_watch = GpuMemoryWatch.start(j.device, warm.proc.pids, gpu_limit,
                                               warm.proc.kill)
    return contender


def _config(j: Judging, role: str, language: Language, artifact: str, env: dict[str, str],
            gpu_limit: int | None) -> dict:
    """The harness's config request (judge/harness/protocol.py)."""
    return {
        "loader": language.loader,
        "artifact": artifact,
        "args": [a.model_dump() for a in j.spec.signature],
        "device": j.sandbox.device_env(j.device)[1],  # its name inside the sandbox
        "flush_bytes": 0 if j.flushes_from_outside else j.device.flush_bytes,
        "cpu_threads": cpu_threads(),
        "gpu_memory_bytes": gpu_limit,
        # the problem's allow-list at run time (the baseline is the organizer's own code)
        "operator_rule": (operator_rule(language.name, j.spec.rules)
                          if role == "submission" else None),
        "packages": list(language.packages),
        "env": env,
        "cpus": sorted(j.contender_cpu_set) if j.contender_cpu_set else None,
        "file_size_bytes": j.file_size_mb * 2**20,
    }


def _idle_memory(warm: WarmHarness) -> float:
    """The harness's memory once torch is imported and before its config: what the
    submission's memory is counted from (its peak restarts here where the host allows)."""
    try:
        warm.await_warm(STARTUP_GRACE_S)
    except ProtocolError as exc:
        warm.proc.close()
        raise ProblemRuntimeError(f"the harness did not start: {exc}; "
                                  f"{warm.proc.log()[-2000:]}") from None
    return warm.proc.mark_memory()


def record_memory(j: Judging, sub: Contender) -> None:
    """What the submission used: device memory where the judge watches it (NVIDIA), else
    its process's growth over the idle harness."""
    if sub.gpu_watch is not None:
        j.result.memory_mb = round(sub.gpu_watch.peak_mb, 1)
        j.result.memory_measure = "device memory, peak"
    else:
        j.result.memory_mb = round(max(sub.proc.peak_memory_mb() - sub.idle_mb, 0.0), 1)
        j.result.memory_measure = "host memory, peak over the idle harness"


def await_ready(j: Judging, contender: Contender) -> None:
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
        ready = contender.receive(STARTUP_GRACE_S + j.spec.limits.run_s)
    except ReplyTimeout:
        close(j, contender)
        raise RunFailure(Verdict.TLE, "loading the source did not finish in time") from None
    except RunFailure:
        close(j, contender)
        raise
    contender.versions = ready.get("versions", {})
    contender.setup = ready.get("device", {})


def close(j: Judging, contender: Contender) -> None:
    """End a contender's processes; keep what its JIT built and what device memory it held."""
    pids = contender.proc.pids() if j.device.kind == "cuda" else []
    contender.close()
    if pids and not await_gpu_release(j.device, pids):  # a hung kernel's context
        j.result.applied["gpu_released"] = False
        j.result.flags.append(f"the {contender.role}'s processes still held the GPU 10 s "
                              "after they were killed: the next judging may share it")
    if contender.jit_cache is not None:  # the run is gone: what it built is kept
        jit_cache.keep(*contender.jit_cache)
        contender.jit_cache = None
    watch = contender.gpu_watch
    if watch is not None:
        j.result.applied.setdefault("gpu_memory", {})[contender.role] = {
            "peak_mb": watch.peak_mb,
            "limit_mb": None if watch.limit_bytes is None else watch.limit_bytes // 2**20}
