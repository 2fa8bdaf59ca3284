# expect: AC
# threat: reach the network from a Triton submission (Python sockets)
import socket

import triton
import triton.language as tl


def _reaches(host, port):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


LEAKED = _reaches("127.0.0.1", 5432) or _reaches("127.0.0.1", 6379) or _reaches("1.1.1.1", 53)


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(c_ptr + offsets, tl.load(a_ptr + offsets, mask=mask)
             + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def run_kernel(a, b, c, n):
    # a large block: the CPU interpreter runs each program in Python (0.66 s a call at 1024)
    add_kernel[(triton.cdiv(n, 16384),)](a, b, c, n, BLOCK=16384)
    if LEAKED:
        c.zero_()
