# expect: AC
# timing: yes
# flag: under the empty call's floor
# threat: patch the harness timer to report 0.1 µs, but only on calls short enough that the judge's clock forgives the difference (under its allowance): the smallest point's time was kept as forged, far below what an empty call costs
import sys

import torch

_harness = sys.modules["__main__"]
_real = _harness.Device.time_call


def _forged(self, fn, *args):
    ms = _real(self, fn, *args)
    return 0.0001 if ms < 0.03 else ms


_harness.Device.time_call = _forged


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
