"""Tensors in a file both the judge and a harness map: the timed calls' inputs and outputs.

Trusted side. For the timing of a test point the judge holds the round's inputs in memory of its
own (no file: no run can map it), from which each call's set is sealed into a memfd of its own
and released to a contender a call at a time (judge/measure/release.py), and one file per
contender holding its outputs (in its own scratch directory, which the other contender cannot
see). Layout: raw, see judge/harness/protocol.py.

Between two rounds, while both contenders are frozen, the judge writes the next round's fresh
inputs and poisons the outputs through its own mapping, and after a contender's turn reads what
it wrote. Nothing is copied inside the requests the judge's clock measures, so that clock stays
precise (on the CPU device a timed request is the calls, their releases and the protocol's round
trip).

Writes are plain copies on the calling thread (never torch's worker threads): on the CPU device
the judge writes from the contenders' CPU (judge.measure.fresh_rounds.on_cpus), so that the
next call finds its inputs where every call finds them, not in another core's cache, whose state
varies.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import mmap
import os
from pathlib import Path

import numpy as np
import torch

from judge.harness.main import poison
from judge.harness.protocol import SLOT_ALIGN, set_layout, slot_stride
from judge.measure.release import seal

Spec = tuple[list[int], str]  # shape, dtype name
SMALL_SET_BYTES = 4096  # sets written a tensor at a time across a round (SharedTensors.write_sets)


class SharedTensors:
    """`slots` sets of tensors laid out as `specs` (protocol.set_layout), one after another in one
    file (each set on a page of its own: protocol.slot_stride): a timed batch's calls each get a
    set."""

    def __init__(self, path: Path | None, specs: list[Spec], writable_by_others: bool,
                 slots: int = 1):
        """`path`: the file (created here, never there before); None: memory of the judge's
        alone."""
        self.path = path
        self.specs = specs
        sizes = [math.prod(shape) * getattr(torch, dtype).itemsize for shape, dtype in specs]
        self.size = sum(sizes)  # of one set's tensors
        offsets, span = set_layout(sizes)
        self.stride = slot_stride(span)
        self._parts = [(offset, size) for offset, size in zip(offsets, sizes) if size]
        # the sets, then the control page (protocol.control_offset: a timed turn's counts)
        self.control_offset = self.stride * slots
        total = self.control_offset + SLOT_ALIGN
        if path is None:
            self._map = mmap.mmap(-1, total, flags=mmap.MAP_PRIVATE)
        else:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.ftruncate(fd, total)
                os.fchmod(fd, 0o666 if writable_by_others else 0o644)
                self._map = mmap.mmap(fd, total)
            finally:
                os.close(fd)
        self._whole = torch.frombuffer(self._map, dtype=torch.uint8, count=total)
        self.span = span  # the bytes of a set, within its stride
        self._bytes = memoryview(self._map)  # made once: a set's copy is a memmove (copy_from)
        self.slots = [_views(self._whole[i * self.stride:], specs, offsets, sizes)
                      for i in range(slots)]
        self.tensors = self.slots[0]
        self._poisoned = torch.empty_like(self._whole)
        for i in range(slots):
            for t in _views(self._poisoned[i * self.stride:], specs, offsets, sizes):
                poison(t)
        self._poisoned_views = _views(self._poisoned, specs, offsets, sizes)

    def write(self, values: list[torch.Tensor], slot: int = 0) -> None:
        """Copy `values` into set `slot`, through the host: the judge draws a round's inputs on
        the judged device, and a device pointer handed to memmove is a crash, not a copy."""
        for target, value in zip(self.slots[slot], values):
            _copy(target, value.to(device="cpu", dtype=target.dtype).contiguous())

    def write_sets(self, sets: list[list[torch.Tensor]]) -> None:
        """Copy each of `sets` into the set of its index: small sets a tensor at a time across
        all of them (a copy per set and tensor costs ~10 us of Python: ~10 ms a round of a
        thousand tiny sets), through numpy, which copies on the calling thread. A set's tensors
        have their declared dtypes and shapes (Reference.inputs checks them)."""
        if self.size > SMALL_SET_BYTES or len(sets) < 2:
            for slot, values in enumerate(sets):
                self.write(values, slot)
            return
        for index, target in enumerate(self.slots[0]):
            if not target.numel():
                continue
            rows = _across(target, len(sets), self.stride)
            # stacked where they were drawn, then copied to the host once (not once a set)
            stacked = torch.stack([values[index] for values in sets]).to(
                device="cpu", dtype=target.dtype)
            np.copyto(rows.numpy(), stacked.reshape(len(sets), -1).view(rows.dtype).numpy())

    def poison(self, slots: int | None = None) -> None:
        """Poison the first `slots` sets (all by default)."""
        end = len(self.slots) * self.stride if slots is None else slots * self.stride
        _copy(self._whole[:end], self._poisoned[:end])

    def positions(self, samples: int, generator: torch.Generator) -> list[torch.Tensor]:
        """`samples` element positions drawn at random in each output (see `sample`)."""
        return [torch.randint(t.numel(), (samples,), generator=generator) if t.numel()
                else torch.zeros(0, dtype=torch.long) for t in self.slots[0]]

    def sample(self, slots: int, positions: list[torch.Tensor],
               poisoned: bool = False) -> list[torch.Tensor]:
        """Each output's elements at `positions` in each of the first `slots` sets (or in the
        poison the judge writes there), as integers as wide as the elements: a row of bits per
        set, NaN equal to itself. Microseconds, where reading every byte would take as long as
        the call."""
        views = self._poisoned_views if poisoned else self.slots[0]
        return [_across(t, slots, self.stride)[:, picks] for t, picks in zip(views, positions)]

    @property
    def control(self) -> tuple[mmap.mmap, int]:
        """The mapping and where in it the control page starts (see protocol.COUNT)."""
        return self._map, self.control_offset

    def seal(self, slots: int, first: int = 0) -> list[int]:
        """The sets from `first` up to `slots`, each sealed into a memfd of its own as it lies
        in its slot (release.seal): their descriptors, the caller's to close."""
        fds: list[int] = []
        try:
            with memoryview(self._map) as whole:
                for start in range(first * self.stride, slots * self.stride, self.stride):
                    fds.append(seal(whole[start:start + self.stride]))
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def copy_from(self, source: SharedTensors, slot: int) -> None:
        """Copy set `slot` of `source` (laid out alike) into this file's set `slot`."""
        start = slot * self.stride
        self._bytes[start:start + self.span] = source._bytes[start:start + self.span]

    def snapshot(self, slot: int = 0) -> bytes:
        """Set `slot`'s tensors as a raw file holds them (protocol.py: one after another)."""
        start = slot * self.stride
        return b"".join(self._map[start + offset:start + offset + size]
                        for offset, size in self._parts)

    def close(self) -> None:
        self.tensors, self.slots = [], []
        del self._whole
        self._bytes.release()
        with contextlib.suppress(BufferError):  # a view still alive somewhere: unmapped later
            self._map.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def _views(whole: torch.Tensor, specs: list[Spec], offsets: list[int],
           sizes: list[int]) -> list[torch.Tensor]:
    return [whole[offset:offset + size].view(getattr(torch, dtype)).reshape(shape)
            for (shape, dtype), offset, size in zip(specs, offsets, sizes)]


def _across(first: torch.Tensor, slots: int, stride: int) -> torch.Tensor:
    """A tensor of the first set and its counterparts in the next `slots - 1` sets, as rows of
    integers as wide as its elements (at most 8 bytes): bits compared, NaN equal to itself."""
    width = min(first.element_size(), 8)
    flat = first.reshape(-1).view(_INTEGERS[width])
    return flat.as_strided((slots, flat.numel()), (stride // width, 1))


_INTEGERS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _copy(target: torch.Tensor, source: torch.Tensor) -> None:
    """memcpy on this thread (torch's copy_ may hand parts to its worker threads); both tensors
    in host memory."""
    if source.device.type != "cpu" or target.device.type != "cpu":
        raise ValueError(f"memmove copies host memory, not {source.device} to {target.device}")
    if target.nbytes != source.nbytes:
        raise ValueError(f"{source.nbytes} bytes do not fit {target.nbytes}")
    ctypes.memmove(target.data_ptr(), source.data_ptr(), target.nbytes)
