# expect: WA
# threat: hard-code the answers of a guessed seed instead of computing them
import torch


def run_kernel(a, b, c, n):
    generator = torch.Generator().manual_seed(0)
    guess_a = torch.randn(n, generator=generator)
    guess_b = torch.randn(n, generator=generator)
    c.copy_(guess_a + guess_b)
