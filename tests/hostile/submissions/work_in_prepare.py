# expect: WA
# problem: matmul
# timing: yes
# threat: patch the harness so that the product is computed in its prepare step, once the call's inputs are in place (the judge wrote a timed call's inputs before the turn: now each is released only during the turn, once the call before it is done, so the products made in prepare are of the last round's inputs and wrong; on the CPU the prepare request is metered with the turn's CPU time, on a GPU its round trip is compared with the baseline's); the call only copies
import sys

import torch

_harness = sys.modules["__main__"]
_prepare = _harness.Harness.op_prepare
ready = {}


def _early(self, msg):
    reply = _prepare(self, msg)
    for inputs in self.prepared.sets:  # every call of the batch
        a, b = inputs.values[0], inputs.values[1]
        ready[a.data_ptr()] = torch.mm(a, b)
    return reply


_harness.Harness.op_prepare = _early


def run_kernel(a, b, c, m, n, k):
    found = ready.pop(a.data_ptr(), None)
    if found is not None:
        c.copy_(found)
    else:
        torch.mm(a, b, out=c)
