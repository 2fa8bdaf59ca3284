# expect: AC
# problem: softmax
# timing: yes
# backends: bwrap
# control: baseline.py
# threat: trim the harness's per-call work (issue 42): the same kernel as the baseline, its report true, but the harness's timed loop replaced in its own process by a leaner one (no layout check, no lambda, no error check per call); on the judge that subtracted the baseline harness's per-call work from both contenders this was credited as the kernel's speed: 1.22-1.28x against the same kernel's 0.96-1.04x, the smallest point at 7.8x
import sys
import time

import torch

_harness = sys.modules["__main__"]
_protocol = sys.modules["protocol"]
_clock = time.perf_counter_ns
_honest_time = _harness.Harness.op_time


def _lean_time(self, msg, record=False):
    """The prepared batch with nothing around each call but the clock (its reports true)."""
    batch = self.prepared
    if batch is None or batch.kernel is not self.kernel:  # floor turns, audits: as the harness
        return _honest_time(self, msg, record)
    self.prepared, times, gate = None, [], batch.gate
    for index, (x, y, *_) in enumerate(batch.bound):
        if gate is not None:  # each call's inputs, as the judge releases them
            gate.take(index)
        start = _clock()
        torch.softmax(x, dim=1, out=y)
        times.append((_clock() - start) / 1e6)
        if gate is not None:
            gate.done(index)
    self.collected = batch.sets
    return {"ok": True, "reports": _protocol.pack_reports(times)}


_harness.Harness.op_time = _lean_time


def run_kernel(x, y, rows, cols):
    torch.softmax(x, dim=1, out=y)
