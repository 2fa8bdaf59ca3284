"""The `process` backend: own session, scrubbed environment, rlimits, cgroup caps, kill on timeout.

It does not hide the file system or the network from the submission: use it for development,
trusted code and hosts without bubblewrap or Docker. `bwrap` is chosen automatically when present.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandbox.base import Mount, Sandbox


class ProcessSandbox(Sandbox):
    name = "process"
    isolates_filesystem = False

    @classmethod
    def available(cls) -> bool:
        return True

    def command(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: Mount) -> list[str]:
        return list(argv)
