import torch


def run_kernel(a, b, scale_a, scale_b, c, m, n, k):
    product = torch.mm(a.float(), b.float().T)
    c.copy_(product * scale_a[:, None] * scale_b[None, :])
