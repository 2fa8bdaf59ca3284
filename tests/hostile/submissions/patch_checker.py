# expect: WA
# threat: patch the checker from Python (it runs in the judge, not in this process)
import torch

try:
    import checkers.allclose

    checkers.allclose.check = lambda *args, **kwargs: None
except ImportError:
    pass


def run_kernel(a, b, c, n):
    torch.zeros(n, out=c)
