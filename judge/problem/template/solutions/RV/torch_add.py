import torch
import triton  # noqa: F401


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
