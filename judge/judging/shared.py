"""Tensors in a file both the judge and a harness map: the timed calls' inputs and outputs.

Trusted side. For the timing of a test point the judge creates, in the job's directory (on a
memory file system when the host has one), one file holding a set of inputs — mapped read-only by
both contenders — and one file per contender holding its outputs (in its own scratch directory,
which the other contender cannot see). Layout: raw, see judge/harness/protocol.py.

Between two calls, while both contenders are frozen, the judge writes the next round's fresh
inputs and poisons the outputs through its own mapping, and after a contender's turn reads what
it wrote. Nothing is copied inside the requests the judge's clock measures, so that clock stays
precise (on the CPU device a timed request is the call and the protocol's round trip alone).

Writes are plain copies on the calling thread (never torch's worker threads): on the CPU device
the judge writes from the contenders' CPU (judge.judging.timing.on_cpus), so that the next call finds its
inputs where every call finds them, not in another core's cache, whose state varies.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import mmap
import os
from pathlib import Path

import torch

from judge.harness.main import poison

Spec = tuple[list[int], str]  # shape, dtype name


class SharedTensors:
    def __init__(self, path: Path, specs: list[Spec], writable_by_others: bool):
        self.path = path
        sizes = [math.prod(shape) * getattr(torch, dtype).itemsize for shape, dtype in specs]
        self.size = sum(sizes)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, max(self.size, 1))
            os.fchmod(fd, 0o666 if writable_by_others else 0o644)
            self._map = mmap.mmap(fd, max(self.size, 1))
        finally:
            os.close(fd)
        self._whole = torch.frombuffer(self._map, dtype=torch.uint8, count=max(self.size, 1))
        self.tensors = _views(self._whole, specs, sizes)
        self._poisoned = torch.empty_like(self._whole)
        for t in _views(self._poisoned, specs, sizes):
            poison(t)

    def write(self, values: list[torch.Tensor]) -> None:
        """Copy `values` into the file, through the host: the judge draws a round's inputs on
        the judged device, and a device pointer handed to memmove is a crash, not a copy."""
        for target, value in zip(self.tensors, values):
            _copy(target, value.to(device="cpu", dtype=target.dtype).contiguous())

    def poison(self) -> None:
        _copy(self._whole, self._poisoned)

    def snapshot(self) -> bytes:
        return self._map[:self.size]

    def close(self) -> None:
        self.tensors.clear()
        del self._whole
        with contextlib.suppress(BufferError):  # a view still alive somewhere: unmapped later
            self._map.close()
        self.path.unlink(missing_ok=True)


def _views(whole: torch.Tensor, specs: list[Spec], sizes: list[int]) -> list[torch.Tensor]:
    views, offset = [], 0
    for (shape, dtype), size in zip(specs, sizes):
        views.append(whole[offset:offset + size].view(getattr(torch, dtype)).reshape(shape))
        offset += size
    return views


def _copy(target: torch.Tensor, source: torch.Tensor) -> None:
    """memcpy on this thread (torch's copy_ may hand parts to its worker threads); both tensors
    in host memory."""
    if source.device.type != "cpu" or target.device.type != "cpu":
        raise ValueError(f"memmove copies host memory, not {source.device} to {target.device}")
    if target.nbytes != source.nbytes:
        raise ValueError(f"{source.nbytes} bytes do not fit {target.nbytes}")
    ctypes.memmove(target.data_ptr(), source.data_ptr(), target.nbytes)
