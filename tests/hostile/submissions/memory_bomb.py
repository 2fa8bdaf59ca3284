# expect: MLE
# threat: allocate until the machine runs out of memory
import torch

hoard = []


def run_kernel(a, b, c, n):
    while True:
        hoard.append(torch.ones(64 * 2**20, dtype=torch.uint8))
