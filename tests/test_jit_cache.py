"""JIT caches kept between judgings of one source (judge/judging/jit_cache.py), never across sources."""

from __future__ import annotations

import shutil

from judge.judging import jit_cache
from judge.judging.pipeline import JudgeOptions, judge_source
from judge.languages import get_language
from judge.problem.schema import load_problem
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS, make_sandbox

# Counts its judgings in its JIT cache folder, and tries to plant a link to a host file there.
COUNTER = '''
import os
import torch
import triton  # noqa: F401 - a Triton source

folder = os.environ["TRITON_CACHE_DIR"]
seen = os.path.join(folder, "seen")
count = int(open(seen).read()) if os.path.exists(seen) else 0
with open(seen, "w") as f:
    f.write(str(count + 1))
try:
    os.symlink("/etc/hostname", os.path.join(folder, "planted"))
except OSError:
    pass


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
'''


def _free_vector_add(tmp_path):
    """vector_add without its rules (they hold Triton sources to their kernels)."""
    folder = tmp_path / "vector_add"
    shutil.copytree(PROBLEMS / "vector_add", folder)
    spec = folder / "problem.yaml"
    spec.write_text(spec.read_text().partition("\nrules:")[0] + "\n")
    return load_problem(folder)


def test_a_sources_jit_cache_comes_back_to_its_next_judging_and_no_other(tmp_path, cpu):
    problem, sandbox, triton = _free_vector_add(tmp_path), make_sandbox("bwrap"), \
        get_language("triton")
    other = COUNTER + "\n# another contestant's copy, one comment apart\n"
    for source in (COUNTER, other):
        shutil.rmtree(jit_cache.entry(triton, source, cpu), ignore_errors=True)

    def judge(source):
        result = judge_source(problem, source, language="triton", device=cpu, sandbox=sandbox,
                              options=JudgeOptions(timing=False))
        assert result.verdict is Verdict.AC, result.message
        return jit_cache.entry(triton, source, cpu)

    kept = judge(COUNTER)
    assert (kept / "seen").read_text() == "1"
    assert not (kept / "planted").exists() and not (kept / "planted").is_symlink()
    assert (judge(COUNTER) / "seen").read_text() == "2"  # the same source: its cache came back
    assert (judge(other) / "seen").read_text() == "1"  # another source: a cache of its own
    assert (kept / "seen").read_text() == "2"
    assert jit_cache.entry(triton, COUNTER, cpu) != jit_cache.entry(triton, other, cpu)
