"""The device self-test: what a GPU machine must show, most valuable rows first.

    python bench/gpu_selftest.py [--device cuda] [--out DIR] [--setup-s S] [--resume FILE]
                                 [--stage-scale X] [--stages a b]

Stages, in this order, each in a child process with a budget of its own (a stage that hangs is
killed at its budget, its processes with it, and the next one runs); their budgets and a set-up
reserve fit ALLOWANCE_S, which `deploy/gpu-selftest.sh` keeps to:

  device     the device, its clocks and state, the versions, the sandbox and the limits applied
  clock      a kernel of known duration (1, 5, 20 ms) against the measured time (GPU)
  floor      the empty call's floor, and the judge's clock honest against honest: the baseline
             judged as the submission (the allowance the timing must leave, measured here)
  languages  one AC judging per language of vector_add (CUDA, Triton, TileLang; on the CPU: C++)
  gputests   the device tests, hostile ones first (`pytest -m gpu tests/gpu`: fused batches,
             work escaping the synchronize, errors, memory; without a GPU only collected), a
             row per test as it ends and their figures in DIR/gpu-timing.json
  selftests  every bundled problem's self-tests on the device, against their expected verdicts
  spread     one source judged five times: the spread of its speedup
  l2         the L2 flush's effect: a read of data that fits in L2, timed cold and warm (GPU)
  profile    a judging under Nsight Compute (skipped where there is none)

Every row is written to DIR/selftest.md (a markdown table) and DIR/figures.jsonl as it finishes,
so a run that is cut still leaves its table; each stage ends with a `done` row. A stage left for
lack of time is named in the last row, and `--resume DIR/figures.jsonl` (that file, carried to
the next command) runs only the stages and device tests not done in it. `--stage-scale`
multiplies every budget and the allowance alike (a slower machine). Each stage times a
judging's points for at most its `point_cap_s` (KJUDGE_MAX_POINT_S). Optional parts that are
missing (TileLang, Nsight Compute, NVML) are `skip` rows. The sandbox is the strongest that works
here (judge/host/sandbox.py `sandbox_for_self_tests`: only the judge's own and the problems'
bundled code runs); the device row says which it is and what it applies. Exit 0 when every row
that ran is fine, 1 when one failed or a stage was cut, 2 when the budgets do not fit the
allowance, 3 when the device is not there (a machine without a GPU ends there).
`deploy/gpu-selftest.sh` runs it on a GPU machine.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NO_DEVICE, BAD_BUDGET = 3, 2
CUT = 2  # a stage's outcome: killed at its budget (0 fine, 1 a row failed)
SPREAD_JUDGINGS = 5
# one command of the self-test, set-up included: a first run and a resumed one fit a 15-minute
# loan of a machine with room to spare, and a 10-minute limit on one command
ALLOWANCE_S = 480
SETUP_RESERVE_S = 40  # the venv's unpacking and the import check, before the stages
DONE = "done"  # the `what` of the row that ends a stage (what --resume reads)


class Status(Enum):
    OK = "ok"
    FAIL = "**FAIL**"
    SKIP = "skip"  # an optional part missing, or a row not run (said why)


@dataclass(frozen=True)
class Stage:
    name: str
    budget_s: float
    run: Callable[[Context], None]
    gpu_only: bool = False
    point_cap_s: float = 1.0  # each judging's points timed for at most this (KJUDGE_MAX_POINT_S)


class Context:
    """What a stage has: the device, the sandbox, and the row writer."""

    def __init__(self, device_name: str, sandbox_name: str, out: Path, stage: str):
        from judge.host.device import DeviceInfo, detect

        described = out / "device.json"  # the orchestrator's detection: no probe per stage
        self.device = (DeviceInfo(**json.loads(described.read_text())) if described.is_file()
                       else detect(device_name))
        self.sandbox = _sandbox(self.device, sandbox_name)
        self.out, self.stage = out, stage
        self.failed = False
        self.passed_tests: list[str] = []  # device tests an earlier run passed (--resume)

    def row(self, what: str, ok: bool, result: str, figures: dict | None = None,
            seconds: float | None = None) -> None:
        self.failed |= not ok
        write_row(self.out, self.stage, what, Status.OK if ok else Status.FAIL, result,
                  figures or {}, seconds)

    def skip(self, what: str, why: str) -> None:
        """A row for an optional part this machine lacks: neither passed nor failed."""
        write_row(self.out, self.stage, what, Status.SKIP, why, {}, None)

    def judge(self, problem, path: Path, tests: list[str] | None = None, timing: bool = True,
              source: str | None = None, language: str | None = None):
        from judge.judging.pipeline import JudgeOptions, judge_source

        return judge_source(problem, source or path.read_text(), language=language,
                            filename=path.name, device=self.device, sandbox=self.sandbox,
                            options=JudgeOptions(timing=timing, tests=tests))


def _sandbox(device, name: str):
    from judge.host.sandbox import sandbox_for, sandbox_for_self_tests
    from sandbox.trusted import TrustedSandbox

    if name == "best":
        return sandbox_for_self_tests(device)
    return TrustedSandbox() if name == "trusted" else sandbox_for(device, name)


def write_row(out: Path, stage: str, what: str, status: Status, result: str, figures: dict,
              seconds: float | None) -> None:
    shown = ", ".join(f"{k} {_short(v)}" for k, v in figures.items() if v is not None)
    line = (f"| {stage} | {what} | {status.value} {result} | {shown} | "
            f"{'' if seconds is None else f'{seconds:.1f}'} |")
    with open(out / "selftest.md", "a") as f:
        f.write(line.replace("\n", " ") + "\n")
    with open(out / "figures.jsonl", "a") as f:
        f.write(json.dumps({"stage": stage, "what": what, "ok": status is not Status.FAIL,
                            "status": status.name, "result": result, "figures": figures,
                            "seconds": seconds}, default=str) + "\n")
    print(line, flush=True)


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return str(value)


def _problem(slug: str):
    from judge.problem.schema import load_problem

    return load_problem(ROOT / "problems" / slug)


def _timing_figures(result) -> dict:
    timed = [t for t in result.tests if t.time_ms is not None]
    return {"speedup": result.speedup, "ms": [t.time_ms for t in timed],
            "floor_ms": [t.floor_ms for t in timed],
            "clock_excess_ms": [t.clock_excess_ms for t in timed],
            # the harness's own work per call, and from which call time a point is resolvable
            "harness_ms": [t.harness_ms for t in timed],
            "resolvable_from_ms": [t.resolvable_from_ms for t in timed],
            "resolvable": [t.resolvable for t in timed],
            "flags": len(result.flags) or None}


def _verdict_text(result) -> str:
    from judge.verdicts import Verdict

    text = result.verdict.value
    if result.verdict is not Verdict.AC:
        detail = result.message or next((f"{t.name}: {t.message}" for t in result.tests
                                         if t.verdict not in (None, Verdict.AC)), "")
        text += f" ({detail.strip()[:300]})"
    return text


# -- stages ---------------------------------------------------------------------------------
def stage_device(ctx: Context) -> None:
    import torch

    from judge.host.device import queue_device
    from judge.host.sandbox import isolation
    from judge.host.telemetry import gpu_compute_mode, gpu_state
    from judge.languages import get_language

    device = ctx.device
    ctx.row("device", True, f"{device.model} ({device.torch_name})",
            {"arch": device.arch, "cache_mib": device.cache_bytes / 2**20,
             "memory_gib": (device.memory_bytes or 0) / 2**30 or None,
             "queue": queue_device(device)})
    if device.kind == "cuda":
        state = gpu_state(device)
        if state is None:  # the judge then times without the throttle check: said, not failed
            ctx.skip("gpu state", "NVML not readable (no clocks, throttling or memory watch)")
        else:
            ctx.row("gpu state", True, "NVML", {**state, "compute_mode": gpu_compute_mode(device)})
    versions = {"python": sys.version.split()[0], "torch": torch.__version__,
                "torch_cuda": torch.version.cuda}
    for name in ("triton", "tilelang"):
        why = _import_error(name)
        versions[name] = get_language(name).toolchain_version() if why is None else \
            f"does not load: {why[:200]}"
    versions["nvcc"] = get_language("cuda").toolchain_version()
    ctx.row("versions", True, "", versions)
    ctx.row("sandbox", True, ctx.sandbox.name, isolation(ctx.sandbox))


def _language_sources(device_kind: str) -> list[tuple[str, Path]]:
    from judge.languages import infer_language

    folder = ROOT / "problems" / "vector_add"
    wanted = ("cuda", "triton", "tilelang") if device_kind != "cpu" else ("cpp", "triton",
                                                                         "tilelang")
    found: dict[str, Path] = {}
    for path in [*sorted((folder / "solutions" / "AC").glob("*.*")),
                 *sorted((folder / "templates").glob("*.*"))]:
        language = infer_language(path, path.read_text()).name
        if language in wanted and "setmaxnreg" not in path.name:
            found.setdefault(language, path)
    return [(name, found[name]) for name in wanted if name in found]


def _import_error(module: str) -> str | None:
    """Why `module` does not import as the harness starts Python (-E -s), or None."""
    try:
        done = subprocess.run([sys.executable, "-E", "-s", "-c", f"import {module}"],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "its import took over 120 s"
    lines = done.stderr.strip().splitlines()
    return None if done.returncode == 0 else (lines[-1] if lines else f"exit {done.returncode}")


def stage_languages(ctx: Context) -> None:
    from judge.languages import get_language
    from judge.verdicts import Verdict

    problem = _problem("vector_add")
    points = [t.name for t in problem.tests_for(ctx.device.kind) if t.timed][:2]
    for language, path in _language_sources(ctx.device.kind):
        packages = getattr(get_language(language), "packages", ())
        why = _import_error(packages[0]) if packages else None
        if why is not None:  # an optional language: the others are still judged
            ctx.skip(f"vector_add {language}", f"{packages[0]} does not load: {why[:300]}")
            continue
        started = time.monotonic()
        result = ctx.judge(problem, path, tests=points, language=language)
        ctx.row(f"vector_add {language} ({path.name})", result.verdict is Verdict.AC,
                _verdict_text(result), _timing_figures(result), time.monotonic() - started)


def stage_spread(ctx: Context) -> None:
    from judge.verdicts import Verdict

    if ctx.device.kind == "cpu":  # a rehearsal of the path: one point keeps it in budget
        problem, tests = _problem("vector_add"), ["n100003"]
        path = problem.path / "solutions/AC/loop.cpp"
    else:
        problem = _problem("rmsnorm")
        path = problem.path / "templates/cuda.cu"
        tests = ["r4096_h4096", "r16384_h7168", "r512_h7168"]
    speedups, started = [], time.monotonic()
    for _ in range(SPREAD_JUDGINGS):
        result = ctx.judge(problem, path, tests=tests)
        if result.verdict is not Verdict.AC:
            ctx.row(f"{problem.slug} {path.name}", False, _verdict_text(result))
            return
        speedups.append(result.speedup)
    spread = (max(speedups) - min(speedups)) / statistics.median(speedups)
    ctx.row(f"{problem.slug} {path.name} x{SPREAD_JUDGINGS}", spread <= 0.01 or
            ctx.device.kind == "cpu", f"spread {100 * spread:.2f} % (target 1 %)",
            {"speedups": speedups}, time.monotonic() - started)


def _spin_kernel(ctx: Context, source: str):
    from judge.harness import main as harness
    from judge.languages import get_language
    from sandbox import SandboxLimits

    built = get_language("cuda").compile(source, ctx.device, ctx.sandbox,
                                         SandboxLimits(memory_mb=4096, pids=512), 120)
    if not built.ok:
        raise RuntimeError(f"the spin kernel did not compile: {built.log[-500:]}")
    return harness.load_native(str(built.artifact),
                               [{"name": "ns", "role": "scalar", "dtype": "int64"}])


def _median_call_ms(device, fn, reps: int = 21, flush: bool = True) -> float:
    for _ in range(3):
        device.time_call(fn)
    samples = []
    for _ in range(reps):
        if flush:
            device.flush_cache()
        device.synchronize()
        samples.append(device.time_call(fn))
    return statistics.median(samples)


def stage_clock(ctx: Context) -> None:
    from judge.harness import main as harness
    from tests.gpu.test_gpu import SPIN_CU

    call, check = _spin_kernel(ctx, SPIN_CU)
    device = harness.Device(ctx.device.torch_name, ctx.device.flush_bytes)
    for ms in (1, 5, 20):
        measured = _median_call_ms(device, lambda ms=ms: call(ms * 1_000_000))
        error = (measured - ms) / ms
        ctx.row(f"spin {ms} ms", abs(error) < 0.02 or ms == 1, f"error {100 * error:+.2f} %",
                {"measured_ms": measured})
    empty = _median_call_ms(device, lambda: call(0), reps=101)
    ctx.row("empty kernel", empty < 0.1, f"{1000 * empty:.1f} µs per call",
            {"empty_call_ms": device.empty_call_ms, "settle_floor_ms": device.settle_floor_ms})


def stage_floor(ctx: Context) -> None:
    from judge.verdicts import Verdict

    for slug in ("vector_add", "softmax"):
        problem = _problem(slug)
        baseline = problem.path / problem.spec.baseline
        started = time.monotonic()
        result = ctx.judge(problem, baseline)  # honest against honest: the same code twice
        ok = result.verdict is Verdict.AC
        if not ok:
            ctx.row(f"{slug} baseline vs itself", False, _verdict_text(result))
            continue
        for t in (t for t in result.tests if t.time_ms is not None):
            ctx.row(f"{slug} baseline vs itself, {t.name}", True,
                    f"speedup {t.speedup:.3f}",
                    {"time_ms": t.time_ms, "reported_ms": t.reported_ms,
                     "batch_calls": t.batch_calls, "floor_ms": t.floor_ms,
                     "clock_excess_ms": t.clock_excess_ms,
                     "prepare_excess_ms": t.prepare_excess_ms,
                     "excess_fraction": (t.clock_excess_ms or 0) / t.time_ms if t.time_ms
                     else None})
        ctx.row(f"{slug} judging", True, f"{len(result.flags)} flags",
                {"flags": result.flags[:3] or None}, time.monotonic() - started)


def stage_l2(ctx: Context) -> None:
    import torch

    from judge.harness import main as harness

    device = harness.Device(ctx.device.torch_name, ctx.device.flush_bytes)
    size = min(ctx.device.cache_bytes // 4, 16 * 2**20)  # fits in L2 with room to spare
    data = torch.ones(size // 4, device=ctx.device.torch_name)

    def read():
        data.sum()

    cold = _median_call_ms(device, read, reps=51, flush=True)
    warm = _median_call_ms(device, read, reps=51, flush=False)
    ctx.row(f"read {size / 2**20:.0f} MiB", cold > warm, f"cold / warm {cold / warm:.2f}",
            {"cold_ms": cold, "warm_ms": warm, **device.describe()})


def stage_selftests(ctx: Context) -> None:
    from judge.problem.schema import ProblemError
    from judge.tooling.selftest import run_self_tests

    slugs = sorted(p.parent.name for p in (ROOT / "problems").glob("*/problem.yaml"))
    if ctx.device.kind == "cpu":
        slugs = ["vector_add"]  # the rehearsal: one problem proves the stage runs
    for slug in ["vector_add", *(s for s in slugs if s != "vector_add")]:
        started = time.monotonic()
        try:
            problem = _problem(slug)
        except ProblemError as exc:
            ctx.row(slug, False, f"invalid: {exc}")
            continue
        outcomes = run_self_tests(problem, ctx.device, ctx.sandbox, timing=False)
        ran = [o for o in outcomes if o.status != "skip"]
        failed = [o for o in outcomes if o.status == "FAIL"]
        ctx.row(slug, not failed, f"{len(ran) - len(failed)} of {len(ran)} as expected",
                {"failed": [f"{o.path}: expected {o.expected.value}, got "
                            f"{o.got.value if o.got else '-'} {o.detail[:200]}"
                            for o in failed] or None,
                 "skipped": sum(o.status == "skip" for o in outcomes) or None},
                time.monotonic() - started)


GPU_TESTS = ("tests/gpu/test_gpu_hostile.py", "tests/gpu/test_gpu.py")  # hostile ones first


def stage_gputests(ctx: Context) -> None:
    """The device tests, a row per test as it ends (bench/selftest_rows.py) and their figures in
    DIR/gpu-timing.json; those a resumed run's earlier one passed are deselected. Without a GPU
    (the rehearsal) only collected, so that a test module that cannot import in the machine's
    environment shows before a GPU is spent on it."""
    log = ctx.out / "pytest-gpu.log"
    started = time.monotonic()
    collect = ["--collect-only"] if ctx.device.kind == "cpu" else ["-rs"]
    passed = [f"--deselect={nodeid}" for nodeid in ctx.passed_tests]
    env = {**os.environ, "KJUDGE_SELFTEST_OUT": str(ctx.out)}
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-p", "bench.selftest_rows", "-m", "gpu", *GPU_TESTS, *collect,
                               *passed], cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env)
    tail = log.read_text().strip().splitlines()[-1:] or [""]
    ctx.row("pytest -m gpu tests/gpu" + (" (collected: needs a GPU to run)" if collect[0]
                                         == "--collect-only" else ""),
            done.returncode in (0, 5) and bool(passed or done.returncode == 0), tail[0],
            {"earlier_passed": len(passed) or None}, seconds=time.monotonic() - started)


def stage_profile(ctx: Context) -> None:
    """A profile judging of vector_add's first AC source under Nsight Compute: ncu found, the
    harness under it in the sandbox, a summary with kernels, the report kept. On the CPU (the
    rehearsal) the repository's stand-in ncu takes its place."""
    import shutil

    from judge.judging import profiling
    from judge.judging.pipeline import JudgeOptions, judge_source
    from judge.settings import settings
    from judge.verdicts import Verdict

    ncu = shutil.which(settings().ncu) or shutil.which("/usr/local/cuda/bin/ncu")
    if ncu is None and ctx.device.kind == "cpu":
        ncu = str(ROOT / "tests" / "standins" / "ncu")
    if ncu is None:
        ctx.skip("ncu", "Nsight Compute not found (KJUDGE_NCU, PATH, /usr/local/cuda/bin)")
        return
    problem = _problem("vector_add")
    language, path = _language_sources(ctx.device.kind)[0]
    point = [t.name for t in problem.tests_for(ctx.device.kind) if t.sample][-1:]
    wanted = profiling.Profiling(ncu=ncu, out_dir=ctx.out / "profile", timeout_s=12)
    started = time.monotonic()
    result = judge_source(problem, path.read_text(), language=language, filename=path.name,
                          device=ctx.device, sandbox=ctx.sandbox,
                          options=JudgeOptions(timing=False, tests=point, profile=wanted))
    found = result.profile or {}
    kernels = found.get("kernels") or []
    duration = next((k.get("Average") for k in kernels if k.get("Metric Name") == "Duration"),
                    None)
    ctx.row(f"ncu over vector_add {language} ({ncu})",
            result.verdict is Verdict.AC and bool(kernels) and bool(found.get("report")),
            found.get("note") or _verdict_text(result),
            {"metrics": len(kernels), "duration": duration,
             "report_bytes": found.get("report_bytes")}, time.monotonic() - started)


STAGES = (
    Stage("device", 20, stage_device),
    Stage("clock", 25, stage_clock, gpu_only=True),
    Stage("floor", 45, stage_floor, point_cap_s=2.0),
    Stage("languages", 70, stage_languages),
    Stage("gputests", 150, stage_gputests),
    Stage("selftests", 60, stage_selftests),
    Stage("spread", 35, stage_spread),
    Stage("l2", 10, stage_l2, gpu_only=True),
    Stage("profile", 25, stage_profile),  # last: a cut here costs no other stage its row
)


def budget_excess_s(stages=STAGES, allowance_s: float = ALLOWANCE_S) -> float:
    """How far the stages' budgets and the set-up reserve exceed the allowance (<= 0: they
    fit)."""
    return sum(stage.budget_s for stage in stages) + SETUP_RESERVE_S - allowance_s


# -- the run ---------------------------------------------------------------------------------
def earlier_rows(figures: Path | None) -> list[dict]:
    """The rows of an earlier run's figures.jsonl (none without one)."""
    if figures is None or not figures.is_file():
        return []
    rows = []
    for line in figures.read_text().splitlines():
        with contextlib.suppress(ValueError):
            rows.append(json.loads(line))
    return rows


def stages_done(rows: list[dict]) -> set[str]:
    """The stages an earlier run finished with every row fine (its `done` row ok)."""
    return {row["stage"] for row in rows if row.get("what") == DONE and row.get("ok")}


def tests_passed(rows: list[dict]) -> list[str]:
    """The device tests an earlier run passed (their node ids, bench/selftest_rows.py)."""
    return [row["what"] for row in rows if row.get("stage") == "gputests"
            and row.get("status") == Status.OK.name and "::" in row.get("what", "")]


def run_stage(name: str, device: str, sandbox: str, out: Path, resume: Path | None) -> int:
    stage = next(s for s in STAGES if s.name == name)
    ctx = Context(device, sandbox, out, name)
    ctx.passed_tests = tests_passed(earlier_rows(resume))
    try:
        stage.run(ctx)
    except Exception as exc:  # a row that says what broke, and the next stage still runs
        import traceback

        traceback.print_exc()
        ctx.row("stage", False, f"{type(exc).__name__}: {exc}"[:400])
    return 1 if ctx.failed else 0


def _kill_tree(pid: int) -> None:
    """The stage and everything it started, also runs that made sessions of their own."""
    from sandbox.base import process_tree

    for _ in range(3):
        for each in process_tree(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(each, signal.SIGKILL)
        time.sleep(0.1)


def orchestrate(args: argparse.Namespace) -> int:
    from judge.host.device import DeviceUnavailable, detect

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    allowance = ALLOWANCE_S * args.stage_scale - args.setup_s
    scaled = [dataclasses.replace(s, budget_s=s.budget_s * args.stage_scale) for s in STAGES]
    header = (f"Device self-test, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
              f"device {args.device}, {allowance:.0f} s of {ALLOWANCE_S * args.stage_scale:.0f} s after "
              f"{args.setup_s:.0f} s of set-up\n\n"
              "| stage | what | result | figures | s |\n|---|---|---|---|---:|\n")
    (out / "selftest.md").write_text(header)
    (out / "figures.jsonl").write_text("")
    print(header, end="", flush=True)
    excess = budget_excess_s(STAGES)  # scaling scales the allowance alike
    if excess > 0:
        write_row(out, "budget", "-", Status.FAIL, f"the stages' budgets and the set-up reserve "
                  f"exceed the allowance of {ALLOWANCE_S} s by {excess:.0f} s", {}, None)
        return BAD_BUDGET
    try:
        device = detect(args.device)
    except DeviceUnavailable as exc:
        write_row(out, "device", args.device, Status.FAIL, f"not here: {exc}", {}, None)
        return NO_DEVICE
    (out / "device.json").write_text(json.dumps(dataclasses.asdict(device)))
    done_before = stages_done(earlier_rows(args.resume))
    status, left, cut = 0, [], []
    for stage in scaled:
        if args.stages and stage.name not in args.stages:
            continue
        if stage.name in done_before:
            write_row(out, stage.name, DONE, Status.OK, "in the earlier run", {}, None)
            continue
        if stage.gpu_only and device.kind == "cpu":
            write_row(out, stage.name, "-", Status.SKIP, "not run: needs a GPU", {}, None)
            continue
        left_s = allowance - (time.monotonic() - started)
        if left_s < min(stage.budget_s, 30):  # a stage with less than its budget still tries
            left.append(stage.name)
            write_row(out, stage.name, "-", Status.SKIP, "not run: no time left", {}, None)
            continue
        code = _run_stage_process(stage, args, min(stage.budget_s, left_s))
        status = max(status, min(code, 1))
        if code == CUT:
            cut.append(stage.name)
    said = [f"{what}: {', '.join(names)}" for what, names in (
        ("left for lack of time", left), ("cut at their budgets", cut)) if names]
    resume = ("" if not said else "; ".join(said) + " (resume: bash deploy/gpu-selftest.sh "
              "--resume <this run's figures.jsonl>)")
    write_row(out, "total", "-", Status.FAIL if status else Status.OK, resume, {},
              time.monotonic() - started)
    if args.write:
        from bench.benchmarks_md import report_section

        command = ("`bash deploy/gpu-selftest.sh`" if device.kind != "cpu" else
                   "`DEVICE=cpu bash deploy/gpu-selftest.sh --write` (the stages a CPU can run)")
        report_section(f"selftest-{device.kind}", f"Device self-test ({device.kind})",
                       f"Command: {command}\n\n{(out / 'selftest.md').read_text()}", True)
    return status


def _run_stage_process(stage: Stage, args: argparse.Namespace, budget: float) -> int:
    """One stage in a child process of its own, killed with all it started at `budget`; its
    `done` row (or the cut) written here. 0 when every row of it was fine, 1 when one failed,
    CUT when it was cut."""
    started = time.monotonic()
    env = {**os.environ, "KJUDGE_MAX_POINT_S": str(stage.point_cap_s)}
    proc = subprocess.Popen([sys.executable, __file__, "--stage", stage.name,
                             "--device", args.device, "--sandbox", args.sandbox,
                             "--out", str(args.out),
                             *(["--resume", str(args.resume)] if args.resume else [])],
                            cwd=ROOT, start_new_session=True, env=env)
    try:
        code = proc.wait(budget)
    except subprocess.TimeoutExpired:
        _kill_tree(proc.pid)
        proc.wait()
        write_row(args.out, stage.name, "-", Status.FAIL, f"cut at its budget of {budget:.0f} s",
                  {}, budget)
        return CUT
    write_row(args.out, stage.name, DONE, Status.FAIL if code else Status.OK,
              f"of a budget of {budget:.0f} s", {}, time.monotonic() - started)
    return 1 if code else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sandbox", default="best",
                        help="best (the strongest that works here), or a backend's name")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "gpu-selftest")
    parser.add_argument("--setup-s", type=float, default=0.0,
                        help="seconds the set-up took before this (off the allowance)")
    parser.add_argument("--resume", type=Path,
                        help="an earlier run's figures.jsonl: run only what it did not finish")
    parser.add_argument("--stage-scale", type=float, default=1.0,
                        help="multiply every stage's budget and the allowance (a rehearsal on "
                             "a slower machine)")
    parser.add_argument("--stages", nargs="*", help="only these stages")
    parser.add_argument("--write", action="store_true", help="put the table in BENCHMARKS.md")
    parser.add_argument("--print-allowance", action="store_true",
                        help="print ALLOWANCE_S (deploy/gpu-selftest.sh reads it) and exit")
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # run one stage, in this process
    args = parser.parse_args(argv)
    if args.print_allowance:
        print(round(ALLOWANCE_S * args.stage_scale))
        return 0
    if args.stage:
        return run_stage(args.stage, args.device, args.sandbox, args.out, args.resume)
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
