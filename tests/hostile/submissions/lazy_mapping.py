# expect: AC
# problem: sparse_read
# timing: yes
# backends: bwrap docker
# control: baseline.py
# gain: none
# flag: mapped whole
# threat: keep the credit for mapping inputs never mapped (issue 42): the baseline's kernel, its report true, but each released set mapped without its pages populated, so that a call reading a sliver of a large input (an embedding lookup, a paged KV cache) pays for the few pages it touches while the judge credited the mapping of them all as the baseline's harness did it
import ctypes
import mmap
import sys
import time

_harness = sys.modules["__main__"]
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
MAP_FIXED = 0x10


def _map_lazily(region, fd):
    """The harness's mapping of a released set, less MAP_POPULATE: a page is faulted in only
    when the kernel reads it."""
    address, length = region
    if _libc.mmap(address, length, mmap.PROT_READ, mmap.MAP_SHARED | MAP_FIXED, fd, 0) != address:
        raise OSError(ctypes.get_errno(), "mmap")


_harness._map_over = _map_lazily


def run_kernel(x, y, n, us):
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass
    y.copy_(x[:1])
