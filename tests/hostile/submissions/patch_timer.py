# expect: AC
# timing: yes
# flag: charged
# threat: patch the harness timer so that every call reports 0.1 µs
import sys
import time

import torch

_harness = sys.modules["__main__"]
_real = _harness.Device.time_call


def _fake(self, fn, *args):
    _real(self, fn, *args)
    return 0.0001


_harness.Device.time_call = _fake
_real_batch = _harness.Device.time_batch


def _fake_batch(self, kernel, bound, *gate):  # the timed batches' reports
    return [0.0001 for _ in _real_batch(self, kernel, bound, *gate)]


_harness.Device.time_batch = _fake_batch


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
    time.sleep(0.002)
