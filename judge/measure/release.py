"""The judge's end of a timed turn's release: each call's inputs reach the contender only once the
call before it is over (judge/harness/protocol.py, "Release").

Trusted side. Before a round, while both contenders are frozen, the judge writes every call's
inputs into a memfd of their own and seals it (`seal`): no sandbox can reach such a file (it has
no path, and the judge's descriptors are in a process no run can see), and once sealed nobody can
change it, so both contenders get the same set. During a contender's `time` request the judge
sends call 0's descriptor, waits for the harness to say the call is done, sends call 1's, and so
on (`Release.turn`). A call therefore cannot read, compute or fuse a later call's work: its inputs
do not exist in the run's reach yet; and a set is whole before it is sent, so nothing can be
read while the judge is still writing it. What the release costs the run (the wait, the mapping)
is per-call work of the harness, which the baseline's floor turns measure and the judge credits
only within its resolution (judge/measure/charging.py): on the CPU device ~10 µs a call here.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import resource
import select
import socket
import time
from collections.abc import Callable
from pathlib import Path

from judge.harness.protocol import COUNT, DONE_AT, RELEASE, RELEASE_SOCKET, RELEASED_AT

SET_NAME = "kjudge-set"  # what a sealed set's memfd is called (/proc shows "/memfd:kjudge-set")
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def seal(data: memoryview) -> int:
    """A sealed memfd holding `data` (a set as it lies in its slot): its descriptor."""
    fd = os.memfd_create(SET_NAME, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        done = 0
        while done < len(data):
            done += os.write(fd, data[done:])
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_room(descriptors: int) -> None:
    """Let this process hold `descriptors` more open files (two rounds' sealed sets), as far as
    its hard limit allows (the soft one is often 1024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = descriptors + 1024  # the worker's own files besides
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))


def held_sets(pid: int) -> int:
    """How many of the judge's released sets process `pid` maps or holds open (its mappings
    and descriptors of memfds named as `seal` names them); 0 once it is gone."""
    name = f"/memfd:{SET_NAME}"
    try:
        with open(f"/proc/{pid}/maps") as maps:
            mapped = sum(name in line for line in maps)
        held = 0
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                held += os.readlink(f"/proc/{pid}/fd/{fd}").startswith(name)
    except OSError:
        return 0
    return mapped + held


class ReleaseFailed(Exception):
    """The contender never connected to its release socket."""


class Release:
    """One contender's release socket for a test point: listening in its folder for the point
    until the harness connects (during its `load`), then that one connection; and the control
    page of its outputs file (`control`: the mapping, the page's offset; protocol.COUNT)."""

    # the judge looks at the run's reply and the clock every this many looks at the count
    LOOKS = 1024

    def __init__(self, folder: Path, control: tuple[mmap.mmap, int]):
        self.folder = folder
        self.control, self.control_at = control
        self.sent = 0  # calls released so far (the point's)
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

    def turn(self, fds: list[int], stop: Callable[[], bool], timeout_s: float) -> int:
        """Release `fds` (one per call, in call order), each once the call before it is done;
        early, without error, once `stop()` (the harness replied: it failed, or the run died),
        when the run breaks the exchange, or after `timeout_s` (its reply will not come either).
        How many calls were done."""
        deadline = time.monotonic() + timeout_s
        for index, fd in enumerate(fds):
            try:
                socket.send_fds(self.conn, [RELEASE.pack(index)], [fd])
            except OSError:
                return index
            self.sent += 1
            COUNT.pack_into(self.control, self.control_at + RELEASED_AT, self.sent)
            if not self._await_done(stop, deadline):
                return index
        return len(fds)

    def _await_done(self, stop: Callable[[], bool], deadline: float) -> bool:
        """Spin until the harness counts the call released last as done (a sleep's wake-up
        would be in the call's time); False when it replied first, or at the deadline."""
        unpack, control, at, sent = COUNT.unpack_from, self.control, self.control_at + DONE_AT, \
            self.sent
        looks = 0
        while unpack(control, at)[0] < sent:
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
