"""The judge's end of a timed turn's release: each call's inputs reach the contender only once the
call before it is over (judge/harness/protocol.py, "Release").

Trusted side. A round's inputs are drawn into the judge's own staging while both contenders
are frozen. The first call's set is released before the turn's requests (no call of the turn
precedes it: `open_turn`); during the contender's `time` request the judge waits for the
harness to count each call done, then releases the next (`Release.turn`). A set is released in
one of two ways (protocol.released_by_mapping):
- written (up to 64 KiB): the judge copies it from its staging into the call's slot of the
  contender's inputs file, which the run maps read-only, then bumps the released count;
- mapped (larger): before the round the judge seals each call's set into a memfd of its own
  (`seal`; no path, no sandbox can reach the judge's descriptors, and once sealed nobody can
  change it, so both contenders get the same set), and sends its descriptor over the release
  socket; the harness maps it over the call's slot, in huge pages where the set is 2 MiB or
  more and the host gives shared memory such pages on request (`huge_pages`).
A call therefore cannot read, compute or fuse a later call's work: its inputs are not in the
run's reach yet. What the release costs the run (the hand-over, the mapping) is per-call work
of the harness, which the baseline's floor turns measure (judge/measure/charging.py): on the
CPU device 1-4 µs a call written, 15-35 µs mapped (BENCHMARKS.md). The hand-over is credited
only within the judge's resolution; the mapping in full, but only where the judge saw it done:
after each turn every set it sent was mapped whole, each page present (`look_at_run`), so
that a run mapping lazily (paying only for the pages its kernel reads) is not credited the
mapping of pages it never mapped. The judge's spin while it waits keeps off the contender's CPU.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import mmap
import os
import resource
import select
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from judge.harness.protocol import COUNT, DONE_AT, HUGE_PAGE, RELEASE, RELEASE_SOCKET, RELEASED_AT

SET_NAME = "kjudge-set"  # what a sealed set's memfd is called (/proc shows "/memfd:kjudge-set")
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
SEAL_TRIES = 20  # add_seals: 2 s of waiting in all, beyond the kernel's own


def seal(data: memoryview) -> int:
    """A sealed memfd holding `data` (a set as it lies in its slot): its descriptor. A set of
    whole huge pages is written through a mapping that asks for them (MADV_HUGEPAGE), which the
    host grants where its shared memory gives huge pages on request (`huge_pages`)."""
    fd = os.memfd_create(SET_NAME, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        if len(data) % HUGE_PAGE == 0:
            os.ftruncate(fd, len(data))
            with mmap.mmap(fd, len(data)) as mapping:
                mapping.madvise(mmap.MADV_HUGEPAGE)
                mapping[:] = data
        else:
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
        add_seals(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def add_seals(fd: int, tries: int = SEAL_TRIES) -> None:
    """SEALS on `fd`. The kernel refuses F_SEAL_WRITE (EBUSY) while a page of the memfd has a
    reference beyond its mappings, waiting ~150 ms for one to go: on a loaded host a reference
    can last longer (khugepaged holding the pages while it collapses them into a huge page,
    for one), and a judging ended in an error. Such a reference is let go; a writable mapping
    someone keeps is not, and still ends in EBUSY."""
    for attempt in range(1, tries + 1):
        try:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or attempt == tries:
                raise
            time.sleep(0.01 * attempt)


SHMEM_HUGE = Path("/sys/kernel/mm/transparent_hugepage/shmem_enabled")


def huge_pages() -> bool:
    """Whether this host gives shared memory huge pages on request: `advise` (or a policy that
    gives them unasked) in SHMEM_HUGE, which `make system-deps` sets where it is `never`
    (deploy/README.md). Without them a large set's release maps 4 KiB pages, slower and noisier."""
    try:
        chosen = SHMEM_HUGE.read_text().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return False
    return chosen in ("always", "within_size", "advise", "force")


def make_room(descriptors: int) -> None:
    """Let this process hold `descriptors` more open files (two rounds' sealed sets), as far as
    its hard limit allows (the soft one is often 1024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = descriptors + 1024  # the worker's own files besides
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))


PAGE = mmap.PAGESIZE
# a /proc/PID/pagemap entry's last byte (little-endian) holds bit 63, "present": 1 where it is set
_PRESENT = bytes(int(b >= 0x80) for b in range(256))


@dataclass(frozen=True)
class Holdings:
    """What a run's processes hold of the judge's released sets (`look_at_run`)."""

    held: int  # sets mapped or held open (mappings and descriptors of memfds named SET_NAME)
    unmapped: int | None  # of the sets asked about, those not mapped whole; None: unreadable


def look_at_run(pids: Iterable[int], sealed: list[int]) -> Holdings:
    """The released sets the processes `pids` hold, and how many of the sets `sealed` (their
    descriptors) none of them maps whole: with every page of the file present in its page
    tables (its mappings found in /proc/PID/maps by the file's inode, their pages in
    /proc/PID/pagemap). A whole mapping costs the same however it is made (populated at once,
    or faulted in 16 pages at a time); one that is not whole was not made. One read of each
    process's maps serves both."""
    pages = {}
    for fd in sealed:
        stat = os.fstat(fd)
        pages[stat.st_ino] = -(-stat.st_size // PAGE)
    present, held, readable = dict.fromkeys(pages, 0), 0, True
    for pid in pids:
        try:
            held += _look_at_process(pid, pages, present)
        except PermissionError:
            readable = False
        except (FileNotFoundError, ProcessLookupError):  # gone: it holds nothing
            continue
    unmapped = sum(present[inode] < want for inode, want in pages.items())
    return Holdings(held, unmapped if readable else None)


def _look_at_process(pid: int, pages: dict[int, int], present: dict[int, int]) -> int:
    """Add to `present` (by inode) the pages of the files `pages` names that process `pid`
    has present in its mappings of them; how many released sets it maps or holds open."""
    name = f"/memfd:{SET_NAME}"
    with open(f"/proc/{pid}/maps") as maps:
        lines = [line.split() for line in maps if name in line]
    held = len(lines)
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            held += os.readlink(f"/proc/{pid}/fd/{fd}").startswith(name)
    wanted = [fields for fields in lines if int(fields[4]) in pages]
    if not wanted:
        return held
    with open(f"/proc/{pid}/pagemap", "rb", buffering=0) as pagemap:
        for fields in wanted:
            inode = int(fields[4])
            start, end = (int(address, 16) for address in fields[0].split("-"))
            within = min((end - start) // PAGE, pages[inode] - int(fields[2], 16) // PAGE)
            if within > 0:
                entries = os.pread(pagemap.fileno(), 8 * within, start // PAGE * 8)
                present[inode] += entries[7::8].translate(_PRESENT).count(1)
    return held


class ReleaseFailed(Exception):
    """The contender never connected to its release socket."""


class Release:
    """One contender's release socket for a test point: listening in its folder for the point
    until the harness connects (during its `load`), then that one connection; and the control
    page of its outputs file (`control`: the mapping, the page's offset; protocol.COUNT)."""

    # the judge looks at the run's reply and the clock every this many looks at the count
    LOOKS = 1024

    def __init__(self, folder: Path, control: tuple[mmap.mmap, int],
                 contender_cpus: set[int] | None = None,
                 written: tuple | None = None):
        """`written`: (the judge's staging, the contender's inputs file), both
        shared.SharedTensors (which imports this module), where sets are released by writing
        them into the contender's file (protocol.released_by_mapping); else None: each call's
        sealed file is sent to be mapped."""
        self.folder = folder
        self.written = written
        # where the judge's spin during a turn must not run: on the contender's CPU it would
        # take a scheduler's slice (milliseconds) out of a call now and then
        self.contender_cpus = contender_cpus or set()
        self.control, self.control_at = control
        self.sent = 0  # calls released so far (the point's)
        self.turn_sent = 0  # of which in the last turn (the first `turn_sent` of its sealed)
        self.judged_ns = 0  # the judge's own time releasing the last turn's calls (`turn`)
        self._listener: socket.socket | None = socket.socket(
            socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        self.conn: socket.socket | None = None
        with _folder(folder) as path:
            (folder / RELEASE_SOCKET).unlink(missing_ok=True)  # what the run may have left
            self._listener.bind(f"{path}/{RELEASE_SOCKET}")
            os.chmod(f"{path}/{RELEASE_SOCKET}", 0o666)  # the run's user may be another
        self._listener.listen(1)
        self._listener.setblocking(False)

    def accept(self, timeout_s: float = 1.0) -> None:
        """Take the connection the harness made while loading the point (waiting `timeout_s`
        at most), and stop listening (a second process of the run cannot connect).
        ReleaseFailed where there is none."""
        try:
            select.select([self._listener], [], [], timeout_s)
            self.conn, _ = self._listener.accept()
        except BlockingIOError:
            raise ReleaseFailed("the run did not connect to the judge's release socket") from None
        finally:
            self._stop_listening()
        self.conn.setblocking(False)

    def open_turn(self, sealed: list[int]) -> None:
        """Release a turn's first call, before the turn's requests (no call of the turn comes
        before it): the harness takes it while it prepares the turn, so that the turn's clock
        starts on a call, not on a wait for the judge. A run that broke the exchange gets
        nothing (and no reply comes)."""
        self.turn_sent = 0
        with contextlib.suppress(OSError):
            self._deliver(0, sealed)

    def turn(self, calls: int, sealed: list[int], stop: Callable[[], bool],
             timeout_s: float) -> int:
        """Release the inputs of calls 1 to `calls` - 1 (written, or `sealed`: a file per call,
        in call order), each once the call before it is done (call 0: `open_turn`), and wait
        for the last; early, without error, once `stop()` (the harness replied: it failed, or
        the run died), when the run breaks the exchange, or after `timeout_s` (its reply will
        not come either). How many calls were done; the judge's own time releasing them, from
        seeing each call done to the next one's release, in `judged_ns` (left out of the
        turn's clock: no run can shorten it)."""
        deadline, clock, self.judged_ns = time.monotonic() + timeout_s, time.perf_counter_ns, 0
        with self.off_contender() as alone:
            for index in range(1, calls + 1):
                if not self._await_done(stop, deadline, alone):
                    return index - 1
                if index == calls:
                    break
                seen = clock()
                try:
                    self._deliver(index, sealed)
                except OSError:
                    return index
                self.judged_ns += clock() - seen
        return calls

    def _deliver(self, index: int, sealed: list[int]) -> None:
        """Call `index`'s set written into the contender's file, or its sealed file sent; then
        counted released."""
        if self.written is not None:
            staging, inputs = self.written
            inputs.copy_from(staging, index)
        else:
            socket.send_fds(self.conn, [RELEASE.pack(index)], [sealed[index]])
        self.sent += 1
        self.turn_sent += 1
        COUNT.pack_into(self.control, self.control_at + RELEASED_AT, self.sent)

    @contextlib.contextmanager
    def off_contender(self):
        """This thread kept off the contender's CPUs; yields whether it could be (a host with
        no other CPU: the spin then yields the CPU at every look). Held for a whole timed
        request too (Timer's `request`): a judge thread left on the contender's CPU when the
        request thaws the run is preempted by it and sees the first call done only once the
        scheduler moves it (1-3.5 ms late in one turn of three at softmax's `wide`, which the
        run spent waiting for its next call's set, inside the clock)."""
        before = os.sched_getaffinity(0)
        elsewhere = before - self.contender_cpus
        if not self.contender_cpus or not elsewhere:
            yield not self.contender_cpus
            return
        os.sched_setaffinity(0, elsewhere)  # pid 0: this thread only
        try:
            yield True
        finally:
            os.sched_setaffinity(0, before)

    def _await_done(self, stop: Callable[[], bool], deadline: float, alone: bool) -> bool:
        """Spin until the harness counts the call released last as done (a sleep's wake-up
        would be in the call's time), yielding the CPU at each look unless `alone` on its
        own; False when it replied first, or at the deadline."""
        unpack, control, at, sent = COUNT.unpack_from, self.control, self.control_at + DONE_AT, \
            self.sent
        looks = 0
        while unpack(control, at)[0] < sent:
            if not alone:
                os.sched_yield()
            looks += 1
            if looks % self.LOOKS == 0 and (stop() or time.monotonic() > deadline):
                return False
        return True

    def _stop_listening(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            (self.folder / RELEASE_SOCKET).unlink(missing_ok=True)

    def close(self) -> None:
        self._stop_listening()
        if self.conn is not None:
            self.conn.close()
            self.conn = None


@contextlib.contextmanager
def _folder(folder: Path):
    """`folder` as a short path (a socket's path has at most 107 bytes): through a descriptor."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)
