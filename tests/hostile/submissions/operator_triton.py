# expect: RV
# threat: where the problem forbids PyTorch, compute with an operator (a + b is no call, so no static rule sees it) and copy the result with the allowed copy_
import torch  # noqa: F401
import triton  # noqa: F401


def run_kernel(a, b, c, n):
    c.copy_(a + b)
