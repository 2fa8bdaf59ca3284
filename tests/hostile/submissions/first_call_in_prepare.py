# expect: AC
# problem: softmax
# timing: yes
# backends: bwrap docker
# control: baseline.py
# flag: charged
# threat: the first call's inputs are released before the turn's requests (the harness takes them while it prepares the turn), so patch the harness to compute the first call of each batch in its prepare step and only copy it in the timed call: at softmax's large point (two calls a batch) half the batch's work would leave the clock; on the CPU the prepare request is metered with the turn's CPU time and the work charged, so the point gains nothing
import sys

import torch

_harness = sys.modules["__main__"]
_prepare = _harness.Harness.op_prepare
ready = {}


def _early(self, msg):
    reply = _prepare(self, msg)
    batch = self.prepared
    if msg.get("fresh") and batch is not None and batch.gate is not None and batch.sets:
        x = batch.sets[0].values[0]  # released to the first call already
        ready[x.data_ptr()] = torch.softmax(x, dim=1)
    return reply


_harness.Harness.op_prepare = _early


def run_kernel(x, y, rows, cols):
    found = ready.pop(x.data_ptr(), None)
    if found is not None:
        y.copy_(found)
    else:
        torch.softmax(x, dim=1, out=y)
