# expect: AC
# backends: bwrap docker
# threat: read the reference, the repository or the judge's environment from a Triton submission
import os

import triton
import triton.language as tl


def _readable(path):
    try:
        with open(path) as f:
            f.read(1)
        return True
    except OSError:
        return False


LEAKED = (_readable("@PROBLEM_DIR@/reference.py") or _readable("@REPO@/judge/judging/pipeline.py")
          or _readable("@DATABASE@") or "KJUDGE_SECRET_CANARY" in os.environ
          or any(k.startswith("KJUDGE_DATABASE") for k in os.environ))


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(c_ptr + offsets, tl.load(a_ptr + offsets, mask=mask)
             + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def run_kernel(a, b, c, n):
    # a large block: the CPU interpreter runs each program in Python (0.66 s a call at 1024)
    add_kernel[(triton.cdiv(n, 16384),)](a, b, c, n, BLOCK=16384)
    if LEAKED:
        c.zero_()
