"""Tensors in a file both the judge and a harness map: the timed calls' inputs and outputs.

Trusted side. For the timing of a test point the judge creates, in the job's directory (on a
memory file system when the host has one), one file holding a set of inputs — mapped read-only by
both contenders — and one file per contender holding its outputs (in its own scratch directory,
which the other contender cannot see). Layout: raw, see judge/harness/protocol.py.

Between two calls, while both contenders are frozen, the judge writes the next round's fresh
inputs and poisons the outputs through its own mapping, and after a contender's turn reads what
it wrote. Nothing is copied inside the requests the judge's clock measures, so that clock stays
precise (on the CPU device a timed request is the call and the protocol's round trip alone).
"""

from __future__ import annotations

import contextlib
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
        whole = torch.frombuffer(self._map, dtype=torch.uint8, count=max(self.size, 1))
        self.tensors: list[torch.Tensor] = []
        offset = 0
        for (shape, dtype), size in zip(specs, sizes):
            view = whole[offset:offset + size].view(getattr(torch, dtype)).reshape(shape)
            self.tensors.append(view)
            offset += size

    def write(self, values: list[torch.Tensor]) -> None:
        for target, value in zip(self.tensors, values):
            target.copy_(value)

    def poison(self) -> None:
        for t in self.tensors:
            poison(t)

    def snapshot(self) -> bytes:
        return self._map[:self.size]

    def close(self) -> None:
        self.tensors.clear()
        with contextlib.suppress(BufferError):  # a view still alive somewhere: unmapped later
            self._map.close()
        self.path.unlink(missing_ok=True)


def work_root() -> str | None:
    """Where jobs keep their files: KJUDGE_WORK_DIR, else /dev/shm when it has room (no disk
    write-back under the timed calls), else the system's temporary directory (None)."""
    chosen = os.environ.get("KJUDGE_WORK_DIR")
    if chosen:
        return chosen
    try:
        stats = os.statvfs("/dev/shm")
        if os.access("/dev/shm", os.W_OK) and stats.f_bavail * stats.f_frsize > 2 * 2**30:
            return "/dev/shm"
    except OSError:
        pass
    return None
