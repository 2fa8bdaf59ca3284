"""The `trusted` backend: plain child processes, for code the judge's organizers wrote.

It isolates nothing (host files, network, other processes: a `kill(-1, …)` from a run as root
would end every process of the machine) and exists for one case: the device self-test on a
machine where no isolating backend works (a rented GPU machine under gVisor or Firecracker, without
bubblewrap or Docker, or where namespaces cannot be made), running only the problems' bundled
self-tests and the judge's own test kernels. It is not in the registry (`sandbox.BACKENDS`: it
defines no `BACKEND`):
`auto` never picks it and no worker, `kjudge judge` or setting can name it; a caller constructs
it on purpose. What it does apply: a session of its own, rlimits (no core files, the file size
cap) and the cgroup limits (memory, processes, freezer, CPUs) where the host's cgroups are
writable. Every judging under it is flagged as not isolated.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandbox.base import Mount, SandboxConfig
from sandbox.command import CommandSandbox


class TrustedSandbox(CommandSandbox):
    name = "trusted"
    isolates_filesystem = False
    trusted_code_only = True

    @classmethod
    def available(cls, config: SandboxConfig | None = None) -> bool:
        return True

    def command(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: Mount) -> list[str]:
        return list(argv)
