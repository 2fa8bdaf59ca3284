"""The CPU cache flush before each timed call, done by a trusted process on the contenders' CPUs.

Trusted side. On the CPU device the flush used to run inside the harness's `prepare` request,
where it was most of the request's time and differed between two honest processes by tens of
microseconds (the same 8 MiB write, 30-100 µs apart: page placement, huge pages), which the
judge's clock could not tell from work a submission moved into `prepare`. Here a small process of
the judge's own, kept to the contenders' CPUs, writes one buffer and then reads another (so that
the written lines are back in memory before the call rather than written back during it), while
the contender is frozen: the flush is outside every request the judge's clock measures, and no
thread of the submission can run during it.

The size is fixed (judge.host.device.CPU_FLUSH_BYTES): enough to push a kernel's working set out of
the private caches of any current core, and the same on every machine, whatever L3 a VM reports.
"""

from __future__ import annotations

import os
import subprocess
import sys

from sandbox.base import parse_cpus

_FLUSHER = r"""
import ctypes, sys
size = int(sys.argv[1])
written = bytearray(size)
clean = bytearray(b"\x02") * size  # written once (a zero-filled buffer would be one shared
# page); never again, so that reading it leaves no dirty line behind
for step in range(1, 1 << 62):
    if not sys.stdin.buffer.read(1):
        break
    ctypes.memset((ctypes.c_char * size).from_buffer(written), step & 0xFF, size)
    clean.find(b"\x01")  # a read of every byte at memory speed (no byte of it is 1)
    sys.stdout.buffer.write(b".")
    sys.stdout.buffer.flush()
"""


class CacheFlusher:
    """One flushing process for the length of a judging's timing."""

    def __init__(self, size: int, cpus: str | None):
        cpu_set = parse_cpus(cpus) if cpus else None
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _FLUSHER, str(size)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, preexec_fn=(lambda: os.sched_setaffinity(0, cpu_set))
            if cpu_set else None)

    def flush(self) -> None:
        self.proc.stdin.write(b"f")
        self.proc.stdin.flush()
        if self.proc.stdout.read(1) != b".":
            raise RuntimeError("the cache flusher stopped")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
