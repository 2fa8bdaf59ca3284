# expect: RE
# problem: sparse_read
# timing: yes
# backends: bwrap docker
# threat: keep every input set the judge releases (a duplicate of each sealed file's descriptor): the sets are the judge's memory, not counted against the run's limit, so a run that kept them would grow the judge by a round's inputs every round; the judge counts what the run maps or holds after each turn and stops it past its slots
import os
import sys
import time

_harness = sys.modules["__main__"]
_map_over = _harness._map_over
_kept = []


def _map_and_keep(region, fd):
    _kept.append(os.dup(fd))
    _map_over(region, fd)


_harness._map_over = _map_and_keep


def run_kernel(x, y, n, us):
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass
    y.copy_(x[:1])
