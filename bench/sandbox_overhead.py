"""Sandbox overhead per backend (issue 4), written between markers in BENCHMARKS.md with --write.

Per backend (process, bwrap, docker with the local test image):
- start-to-exit of `true` in the sandbox;
- a one-test-point judging of an empty run_kernel (harness start, torch import, load, one call,
  exit: the fixed cost of one sandboxed harness);
- a full vector_add judging of loop.cpp with timing (two harnesses), wall and kernel time.

    python bench/sandbox_overhead.py [--runs 5] [--write]
"""

from __future__ import annotations

import argparse
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
from judge.judging.pipeline import JudgeOptions, judge_source  # noqa: E402
from judge.problem.schema import load_problem  # noqa: E402
from sandbox import Mount, SandboxLimits  # noqa: E402
from tests.conftest import docker_test_image  # noqa: E402

EMPTY = 'extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {}'


def make(name: str):
    from sandbox import get_sandbox
    from sandbox.docker import DockerSandbox

    if name == "docker":
        image = docker_test_image()
        return DockerSandbox(image=image, host_python=True) if image else None
    return get_sandbox(name)


def timed(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    problem = load_problem(ROOT / "problems" / "vector_add")
    source = (ROOT / "problems/vector_add/solutions/AC/loop.cpp").read_text()
    cpu = detect("cpu")
    rows = []
    for name in ("process", "bwrap", "docker"):
        sandbox = make(name)
        if sandbox is None:
            rows.append(f"| {name} | not available | | | |")
            continue
        scratch = Path(tempfile.mkdtemp())
        mount = Mount(scratch, "/kj/scratch", writable=True)
        bare = timed(lambda sb=sandbox, m=mount: sb.run(
            ["/bin/true"], mounts=[m], cwd=m, env={}, limits=SandboxLimits(), timeout_s=60),
            args.runs)
        empty = timed(lambda sb=sandbox: judge_source(
            problem, EMPTY, language="cpp", device=cpu, sandbox=sb,
            options=JudgeOptions(timing=False, tests=["tiny"])), args.runs)
        full = [judge_source(problem, source, language="cpp", device=cpu, sandbox=sandbox)
                for _ in range(max(3, args.runs // 2))]
        wall = statistics.median(r.wall_s for r in full)
        kernel = statistics.median(r.kernel_s for r in full)
        rows.append(f"| {name} | {bare * 1000:.0f} | {empty:.2f} | {wall:.2f} | {kernel:.3f} |")
    block = "\n".join([
        f"Measured {date.today()} on this 2-core VM (CPU device); medians of {args.runs} runs.",
        "",
        f"Command: `python bench/sandbox_overhead.py --runs {args.runs} --write`",
        "",
        "| backend | `true` start-to-exit ms | one-point judging of an empty run_kernel s "
        "| vector_add judging wall s | of which kernel s |",
        "| --- | ---: | ---: | ---: | ---: |",
        *rows,
    ])
    report_section("sandbox_overhead", "Sandbox backends (issue 4)", block, args.write)

if __name__ == "__main__":
    main()
