"""The contract between the judge and the in-sandbox harness: requests, replies and dtypes.

Both sides import this one module: the judge as `judge.harness.protocol`, the harness (a script
run inside the sandbox, in the contest's image) as `protocol` from its own folder. Standard
library only, Python 3.10+.

One JSON object per line; the judge writes requests to the harness's stdin, the harness replies on
a private duplicate of its original stdout. Every request carries an `id`, a random nonce drawn by
the judge, and its reply echoes it: a line written into the channel by contestant code (it shares
the harness's process) cannot answer a request unless it finds the nonce in the harness's memory,
and a reply that does not answer its request ends the run.

A harness is started ahead of its judging (a warm slot, judge/judging/warm.py) and says
    {"ok": true, "stage": "warm"}             once torch is imported; it then waits for
    config   config                          the judging's config (below), its first request,
Greeting, before any contestant code loads:  {"ok": true, "stage": "harness"}; it then waits for
    begin                                    (no fields: the judge has taken what the harness
                                             alone holds, e.g. its device memory, as the base
                                             the submission's is counted from)
then, once `run_kernel` is loaded:           {"ok": true, "ready": true, "versions", "device"}

Requests (fields besides `op` and `id`):
  load     test, files, outputs, the input sets of a test point (torch.save files the judge wrote),
           shared                the outputs' {name: {"shape", "dtype"}}, and for the timing run
                                 `shared` = {"release", "outputs", "slots"}: `outputs`, a raw
                                 file the judge maps too, holding `slots` sets (set_layout,
                                 slot_stride apart) of this contender's outputs; `release`, the
                                 path of the judge's release socket, which the harness connects
                                 to before replying; `inputs` (where sets are written, not
                                 mapped): a raw file of `slots` input sets, read-only here (see
                                 "Release" below)
  run      set, save             one checked call on a loaded set: outputs poisoned before, inputs
                                 verified after, outputs saved (raw) to the file `save`
  warm     set                   one call neither checked nor timed (a JIT compiles there)
  warmup   seconds, min_calls    untimed prepare + time cycles on the loaded sets
  prepare  fresh, calls          before a timed batch: the first `calls` fresh sets (`fresh`)
                                 or the next loaded set, outputs poisoned (GPU: on the device),
                                 arguments bound, cache flushed (GPU; the judge flushes the CPU's)
  time     fresh, calls, empty,  a timed batch of `calls` calls (default 1; 0: the request's own
           record                round trip), each on its own set: what `prepare` readied; with
                                 `fresh`, each call's inputs are released by the judge, one call
                                 at a time (see "Release"). Replies `reports`: every call's reported time
                                 (`pack_reports`); `mapped_ms`: the time spent mapping the
                                 released sets; and `handled_ms`: the harness's own time from
                                 reading the request to replying (trusted only in the baseline's
                                 harness, where no contestant code runs: what of a request's
                                 round trip is the harness's work, see judge/measure/charging.py).
                                 `empty` (a loader, "native" or "python"): of a run_kernel that
                                 does nothing, called as that loader calls one, with the same
                                 steps around it (the floor turns; asked of the baseline's
                                 harness). `record`: with the problem's operator rule enforced
                                 (an audit)
  collect                        after a timed call on a GPU: its outputs copied back to the shared
                                 file (a request of its own, so that the copy is not in `time`)
  exit                           the harness says {"ok": true, "bye": true} and ends

Release: a timed turn's inputs reach the run one call at a time, so that no call can read a later
call's inputs (and compute it ahead, or fuse the batch). The judge releases call 0's set before
the turn's `prepare` (the harness takes it there), and each later call's once the harness has
counted the call before it done (CONTROL: DONE_AT, written by the harness; RELEASED_AT, by the
judge, after the set is in place). A set of up to WRITTEN_MAX bytes (`released_by_mapping`) the
judge writes into the call's slot of the contender's inputs file (`load`'s `shared.inputs`,
mapped read-only here); a larger one it sealed into a memfd of its own before the round, and
sends its descriptor over the release socket (SOCK_SEQPACKET, one `RELEASE` record, the call's
index, with the descriptor attached), which the harness maps over the call's slot (its tensors
keep their addresses; huge-page sets on a HUGE_PAGE boundary). A sealed set is whole before it
can be seen: there is nothing to read while the judge is still writing it.

Files: raw = the bytes of each tensor, C-contiguous, one after another in signature order, no
header (both sides know the shapes and dtypes); written and read with `write_raw` / `read_raw`.

Replies: {"id", "ok": true, ...} (`ms`: the call's time, for run; `pinned`, for load:
         whether the shared files are page-locked for the device's copies) or
         {"id", "ok": false, "kind": one of REPLY_KINDS, "error": text}.

Config (the `config` request's field): artifact, loader, args (the signature), device,
flush_bytes, cpu_threads, gpu_memory_bytes, operator_rule (null, or the allow-list rule whose ATen
operators the harness enforces: {"id", "message", "allowed"}), packages (the language's runtime
packages: their operators are not the submission's; their versions are reported), and what the
harness applies to
its own process before anything else runs there: env (the language's environment; its PATH goes
before the process's own), cpus (a list),
file_size_bytes (RLIMIT_FSIZE, only lowered).
"""

from __future__ import annotations

import base64
import ctypes
import os
import secrets
import stat
import struct
from array import array
from typing import NamedTuple


class DType(NamedTuple):
    """What both sides know of a dtype (torch's name is the key): its C element type (a native
    language may spell some its own way: judge/languages), where it may also be a scalar
    argument its C and ctypes types, and how many values one element packs (torch's
    `float4_e2m1fn_x2` holds two fp4 values per byte, the first in the low nibble; its shape
    counts bytes)."""

    c: str
    c_scalar: str | None = None
    ctypes_scalar: str | None = None
    packs: int = 1


DTYPES = {
    "float16": DType("_Float16"), "bfloat16": DType("uint16_t"),
    "float32": DType("float", "float", "c_float"), "float64": DType("double", "double", "c_double"),
    "int8": DType("int8_t"), "uint8": DType("uint8_t"), "int16": DType("int16_t"),
    "int32": DType("int32_t", "int", "c_int32"), "int64": DType("int64_t", "int64_t", "c_int64"),
    "bool": DType("bool"),
    # 8-bit floats (OCP FP8: e4m3 without infinities, e5m2 IEEE-like) and the power-of-two scale
    # of the MX formats (e8m0, no sign, no zero); plain bytes where C has no type for them
    "float8_e4m3fn": DType("uint8_t"), "float8_e5m2": DType("uint8_t"),
    "float8_e8m0fnu": DType("uint8_t"),
    "float4_e2m1fn_x2": DType("uint8_t", packs=2),  # fp4 e2m1 (no NaN, no Inf), two per byte
}
TENSOR_DTYPES = tuple(DTYPES)
SCALAR_DTYPES = tuple(name for name, dtype in DTYPES.items() if dtype.c_scalar)
# what a failed request may be: RE (crash, exception), MLE (out of host or device memory), WA
# (inputs modified, outputs replaced), RV (a forbidden operator ran), CE (the source does not
# load), SE (only before contestant code loads: the environment's fault)
REPLY_KINDS = ("RE", "MLE", "WA", "RV", "CE", "SE")
MAX_ERROR = 4000  # characters of an error text


# Shared files hold a batch's sets one after another, each starting on a page (`slot_stride`): a
# mapping of one set is then exact, and a device can page-lock each set on its own.
SLOT_ALIGN = 4096


# Within a set each tensor starts on a cache line: packed one after another, an odd count of fp16
# elements put the next fp32 tensor off its alignment, and torch refuses such a view.
TENSOR_ALIGN = 64


# A set this large starts and ends on a huge page: released (mapped over its slot) in 2 MiB pages
# where the host lets shared memory use them, its mapping costs ~30 µs for 8 MiB instead of the
# ~500-800 µs of 4 KiB pages populated one by one, and varies as little (judge/measure/release.py).
HUGE_PAGE = 2 << 20


def slot_stride(nbytes: int) -> int:
    """Bytes from one set of a shared file to the next, for a set spanning `nbytes`."""
    align = HUGE_PAGE if nbytes >= HUGE_PAGE else SLOT_ALIGN
    return max(-(-nbytes // align), 1) * align


# The largest set the judge writes into the contender's inputs file at its release; larger ones
# are sent as sealed files to map (measured per call: 4 KiB written 1.5 µs, mapped 13 µs; 64 KiB
# 4 µs and 18 µs; 256 KiB 14 µs and ~30 µs, but written from the judge's CPU a set reaches the
# call dirty in that CPU's cache, and softmax's 256 KiB point ran 10 µs slower a call so).
WRITTEN_MAX = 64 << 10


def released_by_mapping(stride: int) -> bool:
    """Whether the judge releases a timed call's set (of slot stride `stride`) as a sealed file
    the harness maps over the call's slot (moving no data: a page table's work, in huge pages
    where the set is large), or writes it into the slot, in the contender's inputs file."""
    return stride > WRITTEN_MAX


def set_layout(nbytes: list[int]) -> tuple[list[int], int]:
    """Where each tensor of a shared file's set starts (tensors of `nbytes` bytes, in signature
    order, each on a TENSOR_ALIGN boundary) and the bytes the set spans."""
    offsets, end = [], 0
    for size in nbytes:
        offsets.append(end)
        end += -(-size // TENSOR_ALIGN) * TENSOR_ALIGN
    return offsets, end


RELEASE_SOCKET = "release.sock"  # in the contender's folder for the point, beside its outputs
RELEASE = struct.Struct("<q")  # a release record: the call's index in its turn
# The page after a contender's output slots (`control_offset`): the calls released to it so far
# this point (written by the judge once a call's descriptor is sent) and the calls it has done
# (written by the harness after each): each side spins on the other's, which costs a tenth of a
# microsecond a look where a look at the socket costs one. Each a COUNT, at these offsets.
COUNT = struct.Struct("<q")
RELEASED_AT, DONE_AT, CONTROL_BYTES = 0, 8, 16


def control_offset(nbytes: list[int], slots: int) -> int:
    """Where the control page starts in an outputs file of `slots` sets of tensors of `nbytes`."""
    return slot_stride(set_layout(nbytes)[1]) * slots


def request(op: str, **fields) -> dict:
    """A request with a fresh nonce."""
    return {"op": op, "id": secrets.token_hex(8), **fields}


def answers(reply: dict, sent: dict) -> bool:
    """Whether `reply` is the harness's answer to the request `sent`."""
    return reply.get("id") == sent.get("id")


def pack_reports(times_ms: list[float]) -> str:
    """A batch's reported times, one per call, as text: float64 in the machine's order, base64
    (a thousand floats through json.dumps cost the timed request ~0.2 ms, this ~10 µs)."""
    return base64.b64encode(array("d", times_ms).tobytes()).decode()


def unpack_reports(text: str) -> list[float]:
    """`pack_reports`' inverse; ValueError for anything that is not such a list."""
    raw = base64.b64decode(text.encode(), validate=True)
    if len(raw) % 8:
        raise ValueError("reports are not a whole number of float64")
    return array("d", raw).tolist()


Region = tuple[int, int]  # (address, bytes): a contiguous tensor's memory


def _memory(region: Region):
    address, size = region
    return (ctypes.c_char * size).from_address(address)


def write_raw(path: str, regions: list[Region]) -> None:
    """Write the memory of `regions` one after another to the file `path`."""
    with open(path, "wb") as f:
        for region in regions:
            if region[1]:
                f.write(_memory(region))


def read_raw(path: str, regions: list[Region], within: str | None = None) -> None:
    """Fill `regions` from the raw file `path`, which must be a regular file of exactly their
    total size (anything else is ValueError: never read past what the caller allocated) and,
    with `within`, one that lies under that directory once opened (a linked directory on the
    way cannot lead the reader elsewhere)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb", buffering=0) as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a regular file")
        if within is not None:
            opened = os.readlink(f"/proc/self/fd/{fd}")
            if not opened.startswith(os.path.realpath(within) + os.sep):
                raise ValueError(f"{path} leads out of {within}")
        expected = sum(size for _, size in regions)
        if os.fstat(fd).st_size != expected:
            raise ValueError(f"{path} holds {os.fstat(fd).st_size} bytes, not {expected}")
        for region in regions:
            view = memoryview(_memory(region)).cast("B")
            done = 0
            while done < len(view):
                got = f.readinto(view[done:])
                if not got:
                    raise ValueError(f"{path} ended early")
                done += got
