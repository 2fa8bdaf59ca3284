"""The `process` backend: own PID and network namespaces, own session, scrubbed environment,
rlimits, cgroup caps, kill on timeout.

It does not hide the file system from the submission, so it is never chosen automatically: only
when asked for by name (development, trusted code), and every judging under it is flagged. It
still cannot reach the host's other processes: the run is PID 1 of its own PID namespace (a
`kill(-1, …)` ends only the run) and has a network namespace of its own (no network). As root
the namespaces come from `unshare`; otherwise from an unprivileged user namespace as well.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from functools import cache

from sandbox.base import Mount, SandboxConfig
from sandbox.command import CommandSandbox


def unshare_prefix() -> list[str]:
    """The `unshare` command line that gives a run its own PID, mount (/proc) and network
    namespaces; it dies with its parent's kill (`--kill-child`)."""
    prefix = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--net"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    return prefix + ["--"]


@cache
def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run([*unshare_prefix(), "sh", "-c", "echo $$"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == "1"


class ProcessSandbox(CommandSandbox):
    name = "process"
    isolates_filesystem = False
    keeps_out = "network, other processes (host files are visible)"
    needs = "`unshare` from util-linux must be able to make PID and network namespaces"

    @classmethod
    def available(cls, config: SandboxConfig | None = None) -> bool:
        return _namespaces_work()

    def command(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: Mount) -> list[str]:
        # setsid: the run leads a process group of its own inside the namespace, so that a
        # kill(0, …) cannot reach `unshare`, which shares the judge-side group outside it
        return [*unshare_prefix(), "setsid", *argv]


BACKEND = ProcessSandbox
