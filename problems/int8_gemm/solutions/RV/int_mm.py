import torch
import triton  # noqa: F401


def run_kernel(a, b, scale_a, scale_b, c, m, n, k):
    c.copy_(torch._int_mm(a, b.T).float() * scale_a[:, None] * scale_b[None, :])
