# expect: WA
# problem: matmul
# timing: yes
# threat: hand back a tensor of its own by swapping the output's storage (an alias costs nothing: a cached answer, or an input, can stand in for the output)
import torch


def run_kernel(a, b, c, m, n, k):
    c.set_(torch.mm(a, b))
