# expect: WA
# problem: matmul
# timing: yes
# threat: patch the harness so that the product is computed when the outputs are saved, after the clock stopped; the call itself does nothing (a timed call's outputs are read by the judge from memory it shares with the harness: nothing saves them)
import sys

import torch

_harness = sys.modules["__main__"]
_save = _harness._save
pending = []


def _late(outputs, path):
    while pending:
        a, b, c = pending.pop()
        torch.mm(a, b, out=c)
    _save(outputs, path)


_harness._save = _late


def run_kernel(a, b, c, m, n, k):
    pending.append((a, b, c))
