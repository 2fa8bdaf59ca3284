import torch
import triton  # noqa: F401


def run_kernel(x, weight, y, rows, hidden, eps):
    xf = x.float()
    y.copy_((xf * torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + eps) * weight).half())
