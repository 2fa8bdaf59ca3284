"""The clock that scores, at every size of call (issue 28, item 1).

A problem whose only work is to busy-wait `us` microseconds (test points of 5 µs, 50 µs, 500 µs
and 5 ms calls; doing nothing to the output is right), its baseline a PyTorch-language
`run_kernel` that busy-waits. Judged against it, on the CPU device:
- honest: the same busy wait (the speedup should be 1.0: what it is not is the judge's error);
- forged: the same busy wait with the harness's timer patched to report `--forged` (5 %) less.
  A judge that scores the harness's report gives the forgery 1/(1 - 0.05) = 1.053 at every
  point; one whose clock resolves the forgery gives it what it gives the honest one;
- trimmed (issue 42): the same busy wait with the harness's timed loop replaced by a leaner one
  in its own process. A judge that subtracts the baseline harness's per-call work in full
  credits what was trimmed as speed; one that credits it only within its resolution gives the
  trim at most that, and does not count the points where it does not fit.

    python bench/clock_resolution.py [--runs 3] [--sandbox bwrap] [--forged 0.05] [--no-write]

Writes its block into BENCHMARKS.md (section "Clock resolution").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from judge.host.device import detect  # noqa: E402
from judge.host.sandbox import sandbox_for  # noqa: E402
from judge.judging.pipeline import JudgeOptions, judge_source  # noqa: E402
from judge.measure import rounds as timing  # noqa: E402
from judge.problem.schema import load_problem  # noqa: E402

SIZES_US = (5, 50, 500, 5000)
PROBLEM = """title: Busy wait (clock resolution)
languages: [torch]
signature:
  - {name: x, role: input, dtype: int32, shape: [n]}
  - {name: y, role: output, dtype: int32, shape: [n]}
  - {name: n, role: scalar, dtype: int32}
  - {name: us, role: scalar, dtype: int32}
checker: exact
limits: {compile_s: 60, run_s: 10, memory_mb: 4096, output_kb: 64}
scoring: {aggregate: geomean, score: "100 * speedup"}
timing: {warmup_s: 0.05, min_reps: 10, max_reps: 100, max_s: 3.0, target_rse: 0.005}
tests:
""" + "".join(f"  - {{name: us{us}, params: {{n: 1, us: {us}}}{', sample: true' if us == 5 else ''}}}\n"
              for us in SIZES_US)
REFERENCE = """import torch


def make_inputs(params, generator, device):
    return {"x": torch.randint(0, 9, (params["n"],), generator=generator, device=device,
                               dtype=torch.int32)}


def reference(x, n, us):  # integer outputs are poisoned with the minimum: doing nothing is right
    return {"y": torch.full_like(x, torch.iinfo(torch.int32).min)}
"""
BUSY = """import time


def run_kernel(x, y, n, us):
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass
"""
FORGED = """import sys

_harness = sys.modules["__main__"]
_real = _harness.Device.time_call


def _fake(self, fn, *args):
    return {keep} * _real(self, fn, *args)


_harness.Device.time_call = _fake
_real_batch = _harness.Device.time_batch
_harness.Device.time_batch = lambda self, k, b, *g: [{keep} * ms for ms in _real_batch(self, k, b, *g)]
"""


TRIMMED = """import sys
import time

_harness = sys.modules["__main__"]
_protocol = sys.modules["protocol"]
_clock = time.perf_counter_ns
_honest = _harness.Harness.op_time


def _lean(self, msg, record=False):  # the batch with nothing around each call but the clock
    batch = self.prepared
    if batch is None or batch.kernel is not self.kernel:
        return _honest(self, msg, record)
    self.prepared, times, gate = None, [], batch.gate
    for index, args in enumerate(batch.bound):
        if gate is not None:  # each call's inputs, as the judge releases them
            gate.take(index)
        start = _clock()
        run_kernel(*args)
        times.append((_clock() - start) / 1e6)
        if gate is not None:
            gate.done(index)
    self.collected = batch.sets
    return {"ok": True, "reports": _protocol.pack_reports(times)}


_harness.Harness.op_time = _lean
"""


def busy_problem(folder: Path):
    folder.mkdir()
    (folder / "problem.yaml").write_text(PROBLEM)
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "baseline.py").write_text(BUSY)
    (folder / "statement.md").write_text("Wait `us` microseconds.\n")
    for sub in ("templates", "solutions/AC"):
        (folder / sub).mkdir(parents=True)
    (folder / "templates" / "torch.py").write_text(BUSY)
    (folder / "solutions" / "AC" / "busy.py").write_text(BUSY)
    return load_problem(folder)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--forged", type=float, default=0.05, help="the share of each call the "
                        "forged timer leaves out of its report")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    device = detect("cpu")
    sandbox = sandbox_for(device, args.sandbox)
    started = time.monotonic()
    sources = {"honest": BUSY, "forged": FORGED.format(keep=1 - args.forged) + BUSY,
               "trimmed": TRIMMED + BUSY}
    speedups: dict[str, dict[str, list[float]]] = {k: {} for k in sources}
    batches: dict[str, list[float]] = {}
    resolved: dict[str, list[bool]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        problem = busy_problem(Path(tmp) / "busy")
        for _ in range(args.runs):
            for kind, source in sources.items():  # interleaved: the host's drift hits both
                result = judge_source(problem, source, language="torch", filename="busy.py",
                                      device=device, sandbox=sandbox, options=JudgeOptions())
                assert result.verdict.value == "AC", (kind, result.verdict, result.message)
                for t in result.tests:
                    speedups[kind].setdefault(t.name, []).append(t.speedup)
                    if kind == "honest":
                        batches.setdefault(t.name, []).append(t.batch_calls)
                        resolved.setdefault(t.name, []).append(bool(t.resolvable))
    unscored = 1 / (1 - args.forged)
    rows = ["| call | calls per batch | resolvable (runs) | honest speedup (runs) | honest error | "
            "forged speedup (runs) | forgery's gain over honest | trimmed speedup (runs) | "
            "trim's gain over honest |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in speedups["honest"]:
        honest, forged = speedups["honest"][name], speedups["forged"][name]
        trimmed = speedups["trimmed"][name]
        h, f, t = (statistics.median(x) for x in (honest, forged, trimmed))
        rows.append(f"| {name.removeprefix('us')} µs | {statistics.median(batches[name]):.0f} | "
                    f"{sum(resolved[name])} of {len(resolved[name])} | "
                    f"{', '.join(f'{s:.3f}' for s in honest)} | {abs(h - 1):.1%} | "
                    f"{', '.join(f'{s:.3f}' for s in forged)} | {f / h - 1:+.1%} | "
                    f"{', '.join(f'{s:.3f}' for s in trimmed)} | {t / h - 1:+.1%} |")
    block = "\n".join([
        f"Measured {date.today()} on {platform.processor() or platform.machine()} "
        f"({len(os.sched_getaffinity(0))} CPUs), sandbox `{args.sandbox}`, "
        f"{time.monotonic() - started:.0f} s, with `python bench/clock_resolution.py --runs "
        f"{args.runs} --sandbox {args.sandbox} --forged {args.forged}`.",
        "",
        f"A busy wait judged against the same busy wait (honest), and with the harness's timer "
        f"forged to report {args.forged:.0%} less (forged): scoring the report would give the "
        f"forgery {unscored:.3f}; and with the harness's timed loop replaced in its own process "
        "by a leaner one (trimmed: the same busy wait, its reports true), which the judge that "
        "subtracted the baseline harness's per-call work in full credited as speed. A turn is a "
        f"batch of calls lasting at least {timing.BATCH_MS:g} ms on the judge's clock, each call "
        "on its own fresh inputs; the clock scores, less the judge's part of a request and the "
        "baseline harness's work per request and per call, the latter only up to three times the "
        "problem's target error of the call (a point where it does not fit is not resolvable and "
        "does not count in the score).",
        "",
        *rows,
    ])
    report_section("clock-resolution", "Clock resolution (issue 28)", block,
                   write=not args.no_write)


if __name__ == "__main__":
    main()
