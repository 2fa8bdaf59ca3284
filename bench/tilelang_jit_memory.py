"""Host memory of TileLang's JIT for the GPU, measured without a GPU.

    python bench/tilelang_jit_memory.py [--problems a b] [--write]

On a GPU a TileLang submission compiles at the first call of every shape: TVM lowers the kernel
and runs nvcc, inside the harness's process tree and so inside its memory limit, on top of torch
and TVM. For each problem's TileLang template and its smallest GPU test point, a fresh process
(as the harness is) imports torch and the template, then calls run_kernel with zero tensors on
the CPU: the kernel is lowered and compiled with nvcc for sm_90a exactly as on the device, and
only the launch fails ("device_type mismatch"). Reported: the process's own peak RSS (torch,
TVM, the lowering) and nvcc's (the largest child), whose sum bounds what the compile adds to the
harness's cgroup. The CUDA context of a real GPU process comes on top (not measurable here).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from judge.problem import exprs  # noqa: E402
from judge.problem.schema import load_problem  # noqa: E402

PROBE = r"""
import importlib.util, json, os, resource, sys
os.environ["KJUDGE_TILELANG_TARGET"] = json.dumps({"kind": "cuda", "arch": "sm_90a"})
import torch
spec = importlib.util.spec_from_file_location("submission", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
args = []
for arg in json.loads(sys.argv[2]):
    if arg["role"] == "scalar":
        args.append(arg["value"])
    else:
        args.append(torch.zeros(arg["shape"], dtype=getattr(torch, arg["dtype"])))
try:
    module.run_kernel(*args)
    outcome = "ran"
except Exception as exc:
    outcome = "compiled" if "device_type mismatch" in str(exc) else f"failed: {exc!s:.200}"
print(json.dumps({"imported_mb": imported / 1024,
                  "process_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "nvcc_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "outcome": outcome}))
"""


def arguments(problem, test) -> list[dict]:
    args = []
    for arg in problem.spec.signature:
        if arg.role == "scalar":
            value = exprs.evaluate(arg.value if arg.value is not None else arg.name, test.params)
            args.append({"role": "scalar", "value": int(value) if arg.dtype.startswith("int")
                         else float(value)})
        else:
            shape = [int(exprs.evaluate(s, test.params)) for s in arg.shape]
            args.append({"role": arg.role, "dtype": arg.dtype, "shape": shape})
    return args


def measure(slug: str) -> dict | None:
    problem = load_problem(ROOT / "problems" / slug)
    template = problem.path / "templates" / "tilelang.py"
    tests = problem.tests_for("cuda")
    if not template.is_file() or not tests:
        return None
    test = min(tests, key=lambda t: sum(math.prod(a["shape"]) for a in arguments(problem, t)
                                        if a["role"] != "scalar"))
    with tempfile.TemporaryDirectory() as cache:  # a cold TileLang kernel cache: nvcc runs
        done = subprocess.run([sys.executable, "-c", PROBE, str(template),
                               json.dumps(arguments(problem, test))],
                              env={**os.environ, "TILELANG_CACHE_DIR": cache},
                              capture_output=True, text=True, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"problem": slug, "test": test.name, "outcome": done.stderr[-300:]}
    return {"problem": slug, "test": test.name, **json.loads(lines[-1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="*")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    slugs = args.problems or sorted(p.parent.name for p in (ROOT / "problems").glob("*/problem.yaml"))
    rows = [r for r in map(measure, slugs) if r]
    lines = ["| problem | test point | torch + template | after lowering | nvcc peak | sum | outcome |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        if "process_mb" not in r:
            lines.append(f"| {r['problem']} | {r['test']} | | | | | {r['outcome']} |")
            continue
        lines.append(f"| {r['problem']} | {r['test']} | {r['imported_mb']:.0f} MB | "
                     f"{r['process_mb']:.0f} MB | {r['nvcc_mb']:.0f} MB | "
                     f"{r['process_mb'] + r['nvcc_mb']:.0f} MB | {r['outcome']} |")
    table = "\n".join(lines)
    report_section("tilelang-jit-memory", "TileLang JIT memory (host, sm_90a, measured on the CPU)",
                   "Command: `python bench/tilelang_jit_memory.py --write`\n\n" + table,
                   args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
