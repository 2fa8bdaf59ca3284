import torch


def run_kernel(x, y, rows, cols):
    torch.softmax(x, dim=1, out=y)
