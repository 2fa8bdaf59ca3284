"""Sandbox backends. Trusted code: it starts untrusted code, it never imports it.

`get_sandbox("auto")` picks the strongest backend this host has: docker (when an image is
configured), else bwrap. It never picks `process`, which does not hide the file system: that one
runs only when asked for by name.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from sandbox.base import (
    Mount,
    ProcessDied,
    ProtocolError,
    ReplyTimeout,
    RunResult,
    Sandbox,
    SandboxLimits,
    SandboxProcess,
)
from sandbox.bwrap import BwrapSandbox
from sandbox.docker import DockerSandbox
from sandbox.process import ProcessSandbox

BACKENDS: dict[str, type[Sandbox]] = {
    "docker": DockerSandbox, "bwrap": BwrapSandbox, "process": ProcessSandbox,
}
# docker counts as available only when an image is configured and the engine answers
PREFERENCE = ("docker", "bwrap")
ISOLATED = PREFERENCE  # the backends that hide the host's files from a submission


class NoSandbox(ValueError):
    """No backend that isolates submissions on this host (or the one named is missing)."""


NO_ISOLATION = ("no sandbox that isolates submissions is available on this host: install "
                "bubblewrap (`apt-get install bubblewrap`), or run Docker and set "
                "KJUDGE_DOCKER_IMAGE to the contest image pinned by digest; `--sandbox process` "
                "runs submissions without file-system isolation (development only)")


def get_sandbox(name: str = "auto", devices: Sequence[str] = (),
                gpu_uuid: str | None = None) -> Sandbox:
    """A backend by name; `devices` are the accelerator device nodes its runs may open and
    `gpu_uuid` the one NVIDIA GPU a container gets."""
    if name == "auto":
        name = next((n for n in PREFERENCE if BACKENDS[n].available()), None)
        if name is None:
            raise NoSandbox(NO_ISOLATION)
    if name not in BACKENDS:
        raise NoSandbox(f"unknown sandbox backend {name!r}; known: {', '.join(BACKENDS)}")
    backend = BACKENDS[name]
    if not backend.available():
        raise NoSandbox(f"sandbox backend {name!r} is not available on this host" + (
            " (`unshare` from util-linux must be able to make PID and network namespaces)"
            if name == "process" else "; " + NO_ISOLATION))
    if backend is ProcessSandbox:
        return backend()
    if backend is DockerSandbox:
        return backend(devices=devices, gpu_uuid=gpu_uuid)
    # toolchains outside /usr (e.g. /opt/maca) are named in KJUDGE_SANDBOX_PATHS; CUDA's by
    # CUDA_HOME, as nvcc is looked up there too
    extra = [p for p in [*os.environ.get("KJUDGE_SANDBOX_PATHS", "").split(":"),
                         os.environ.get("CUDA_HOME", "")] if p]
    return backend(extra_system_paths=extra, devices=devices)


__all__ = [
    "BACKENDS", "ISOLATED", "NO_ISOLATION", "Mount", "NoSandbox", "ProcessDied", "ProtocolError",
    "ReplyTimeout", "RunResult", "Sandbox", "SandboxLimits", "SandboxProcess", "get_sandbox",
]
