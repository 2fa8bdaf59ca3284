"""The `bwrap` backend (bubblewrap): no network, read-only system, private /tmp, uid 65534.

Only what the run needs is visible: the system's /usr, the Python installation and its
environment, the toolchains named in `extra_system_paths`, and the job's own mounts; runs on an
accelerator also get its device nodes and a read-only /sys (as a container does).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from sandbox.base import Mount, SandboxConfig
from sandbox.command import CommandSandbox

log = logging.getLogger("kjudge.sandbox")

ETC_FILES = ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime")


def python_paths() -> list[str]:
    """The interpreter's installation, the active virtual environment, and package folders that
    a .pth file adds from elsewhere (another venv's site-packages: deploy/gpu-env.sh on a machine
    whose python3 is itself a venv). Never other sys.path entries: the judge's own checkout is
    one of them."""
    paths = {sys.base_prefix, sys.prefix, str(Path(sys.executable).parent)}
    paths |= {p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")
              and Path(p).is_dir()}
    paths = {p for p in paths if not p.startswith("/usr/") and p != "/usr"}
    return sorted(p for p in paths  # each folder once: none inside another one bound
                  if not any(p.startswith(other + os.sep) for other in paths))


PROBE = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--uid", "65534",
         "--gid", "65534", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
PROBE_TRIES = 3  # a host short of a resource for a moment (processes, memory) fails one probe


@cache
def _bwrap_works() -> bool:
    """bwrap is installed and can make its namespaces here (a container without privileges, or
    a kernel that refuses user namespaces, has the binary but not the means). A failed probe is
    tried again, and each failure is logged with bwrap's own words: a worker that concluded
    "no sandbox" from one probe on a loaded host stopped for good, saying nothing of why."""
    if shutil.which("bwrap") is None:
        return False
    for attempt in range(1, PROBE_TRIES + 1):
        try:
            done = subprocess.run(PROBE, capture_output=True, text=True, timeout=30)
            why = f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
            if done.returncode == 0:
                return True
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = repr(exc)
        log.warning("bwrap cannot make its namespaces here (try %d of %d): %s", attempt,
                    PROBE_TRIES, why)
        if attempt < PROBE_TRIES:
            time.sleep(attempt)  # 3 s in all where bwrap cannot work, once per process
    return False


class BwrapSandbox(CommandSandbox):
    name = "bwrap"
    isolates_filesystem = True
    keeps_out = "host files, network, other processes"
    needs = "install bubblewrap (`apt-get install bubblewrap`)"
    auto_rank = 1

    def __init__(self, extra_system_paths: Sequence[str] = (), devices: Sequence[str] = ()):
        self.extra_system_paths = list(extra_system_paths)
        self.devices = list(devices)  # e.g. /dev/nvidia0 for a GPU worker

    @classmethod
    def available(cls, config: SandboxConfig | None = None) -> bool:
        return _bwrap_works()

    @classmethod
    def from_config(cls, config: SandboxConfig, devices: Sequence[str] = (),
                    gpu_uuid: str | None = None) -> BwrapSandbox:
        """Toolchains outside /usr (e.g. /opt/maca) are the config's `system_paths`; CUDA's is
        $CUDA_HOME, where nvcc is looked up too."""
        paths = [*config.system_paths, os.environ.get("CUDA_HOME", "")]
        return cls(extra_system_paths=[p for p in paths if p], devices=devices)


    def command(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: Mount) -> list[str]:
        cmd = [
            "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--uid", "65534", "--gid", "65534",
            "--ro-bind", "/usr", "/usr",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        ]
        for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32"):
            path = Path(top)
            if path.is_symlink():
                cmd += ["--symlink", str(path.readlink()), top]
            elif path.is_dir():
                cmd += ["--ro-bind", top, top]
        for path in [*ETC_FILES, *python_paths(), *self.extra_system_paths]:
            if Path(path).exists():
                cmd += ["--ro-bind", path, path]
        if self.devices:  # the CUDA driver reads the GPU's PCI and NUMA topology under /sys
            cmd += ["--ro-bind", "/sys", "/sys"]
        for device in self.devices:
            cmd += ["--dev-bind", device, device]
        for mount in mounts:
            cmd += ["--bind" if mount.writable else "--ro-bind", str(mount.host), mount.target]
        cmd += ["--remount-ro", "/", "--chdir", cwd.target, "--"]  # mount points stay read-only
        return cmd + list(argv)


BACKEND = BwrapSandbox
