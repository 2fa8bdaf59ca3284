# expect: AC
# problem: softmax
# timing: yes
# backends: bwrap
# control: baseline.py
# threat: aggregator underflow: the harness's timer patched to report 45 µs less than every call took (at least 5 % of it), under the old judge's allowance (0.05 ms + 5 %, above which its clock charged what it saw): softmax scores the geometric mean of its points, so the small points' fake speedups (4x on 60 µs calls) lifted the whole score
import sys

import torch

_harness = sys.modules["__main__"]
_real = _harness.Device.time_call


def _forged(self, fn, *args):
    ms = _real(self, fn, *args)
    return max(ms - 0.045, 0.05 * ms)


_harness.Device.time_call = _forged
_real_batch = _harness.Device.time_batch
_harness.Device.time_batch = lambda self, k, b, *g: [max(ms - 0.045, 0.05 * ms)
                                                for ms in _real_batch(self, k, b, *g)]


def run_kernel(x, y, rows, cols):
    torch.softmax(x, dim=1, out=y)
