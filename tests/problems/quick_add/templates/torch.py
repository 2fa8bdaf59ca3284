import torch


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
