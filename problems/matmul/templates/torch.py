import torch


def run_kernel(a, b, c, m, n, k):
    torch.mm(a, b, out=c)
