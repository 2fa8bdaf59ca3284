"""What releasing a timed call's inputs costs (issue 42): the judge's `Release.turn` releasing
each call's set once the call before it is done (copied into the contender's inputs file up to
64 KiB, else a sealed file sent to be mapped), and a harness (`Release.take`, a process of its
own on another CPU) taking each and counting it done, with no call between.

    python bench/release_cost.py [--turns 20] [--no-write]

Per call, on the judge's clock (median over the turns), by the size of a call's inputs; and the
mapping's share (the kernel populating the set's pages: what the judge credits in full). A
real call evicts the harness's code and data from the cache, which makes each release slower
than here (`kjudge judge`'s table shows the harness's work measured in the floor turns).
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

import torch  # noqa: E402

from bench.benchmarks_md import report_section  # noqa: E402
from judge.harness import main as harness  # noqa: E402
from judge.harness.protocol import RELEASE_SOCKET, released_by_mapping  # noqa: E402
from judge.measure.release import Release  # noqa: E402
from judge.measure.shared import SharedTensors  # noqa: E402

SIZES = (4 << 10, 64 << 10, 256 << 10, 1 << 20, 8 << 20)


def _harness_side(folder: Path, floats: int, calls: int, turns: int, cpu: int,
                  written: bool) -> None:
    """The child: `turns` turns of `calls` releases taken and done; the mapping's time to a
    pipe-less report (its exit leaves it in a file)."""
    os.sched_setaffinity(0, {cpu})
    base = object.__new__(harness.InputSet)
    base.names = ["x", "y"]
    base.inputs, base.outputs = {"x": torch.empty(floats)}, {"y": torch.empty(1)}
    base.values = [base.inputs["x"], base.outputs["y"]]
    fresh = base.shared_copies(str(folder / "out.raw"), calls,
                               str(folder / "inputs.raw") if written else None)
    release = harness.Release(str(folder / RELEASE_SOCKET), str(folder / "out.raw"),
                              base.outputs, calls, mapped=not written)
    gate = harness.Gate(release, fresh)
    for _ in range(turns):
        gate.open()
        for index in range(calls):
            gate.take(index)
            gate.done(index)
    (folder / "mapped").write_text(str(release.mapped_ns / (turns * calls) / 1e3))
    os._exit(0)


def cost(nbytes: int, turns: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="kjudge-release-"))
    floats = nbytes // 4
    cpus = sorted(os.sched_getaffinity(0))
    calls = max(2, min(256, (16 << 20) // nbytes))
    staging = SharedTensors(None, [([floats], "float32")], False, calls)
    outputs = SharedTensors(folder / "out.raw", [([1], "float32")], True, calls)
    written = not released_by_mapping(staging.stride)
    inputs = (SharedTensors(folder / "inputs.raw", staging.specs, False, calls) if written
              else None)
    release = Release(folder, outputs.control, {cpus[-1]}, (staging, inputs) if written else None)
    pid = os.fork()
    if pid == 0:
        _harness_side(folder, floats, calls, turns, cpus[-1], written)
    os.sched_setaffinity(0, {cpus[0]})
    release.accept(timeout_s=60)
    per_call, held = [], []
    for _ in range(turns):
        sealed = [] if written else staging.seal(calls)
        start = time.perf_counter_ns()
        release.open_turn(sealed)
        release.turn(calls, sealed, lambda: False, 60)
        per_call.append((time.perf_counter_ns() - start) / calls / 1e3)
        for fd in held:  # held one round more, as FreshRounds does
            os.close(fd)
        held = sealed
    os.waitpid(pid, 0)
    for fd in held:
        os.close(fd)
    os.sched_setaffinity(0, set(cpus))
    mapped = float((folder / "mapped").read_text())
    release.close()
    for shared in (staging, outputs, *([inputs] if written else [])):
        shared.close()
    return {"bytes": nbytes, "calls": calls, "per_call_us": statistics.median(per_call),
            "mapped_us": mapped, "how": "written" if written else "mapped"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)  # a forked child's torch would wait on the parent's pool's threads
    started = time.monotonic()
    rows = [cost(size, args.turns) for size in SIZES]
    lines = ["| a call's inputs | released | calls a turn | per call (judge's clock) "
             "| of which mapping |", "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['bytes'] >> 10} KiB | {row['how']} | {row['calls']} "
                     f"| {row['per_call_us']:.1f} µs | {row['mapped_us']:.1f} µs |")
    block = (f"Measured {date.today()} on {platform.machine()} ({os.cpu_count()} CPUs), "
             f"{time.monotonic() - started:.0f} s, with `python bench/release_cost.py "
             f"--turns {args.turns}` (medians over the turns; no call between releases).\n\n"
             + "\n".join(lines))
    report_section("release-cost", "Releasing each call's inputs (issue 42)", block,
                   write=not args.no_write)


if __name__ == "__main__":
    main()
