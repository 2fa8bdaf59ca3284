"""Sandbox backends. Trusted code: it starts untrusted code, it never imports it.

`get_sandbox("auto")` picks the strongest backend this host has: docker (when an image is
configured), else bwrap. It never picks `process`, which does not hide the file system: that one
runs only when asked for by name.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandbox.base import (
    Mount,
    ProcessDied,
    ProtocolError,
    ReplyTimeout,
    RunResult,
    Sandbox,
    SandboxConfig,
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


def get_sandbox(name: str = "auto", config: SandboxConfig | None = None,
                devices: Sequence[str] = (), gpu_uuid: str | None = None) -> Sandbox:
    """A backend by name, built from `config` (the defaults when None: no docker image);
    `devices` are the accelerator device nodes its runs may open and `gpu_uuid` the one NVIDIA
    GPU a container gets."""
    config = config or SandboxConfig()
    if name == "auto":
        name = next((n for n in PREFERENCE if BACKENDS[n].available(config)), None)
        if name is None:
            raise NoSandbox(NO_ISOLATION)
    if name not in BACKENDS:
        raise NoSandbox(f"unknown sandbox backend {name!r}; known: {', '.join(BACKENDS)}")
    backend = BACKENDS[name]
    if not backend.available(config):
        raise NoSandbox(f"sandbox backend {name!r} is not available on this host" + (
            " (`unshare` from util-linux must be able to make PID and network namespaces)"
            if name == "process" else "; " + NO_ISOLATION))
    return backend.from_config(config, devices=devices, gpu_uuid=gpu_uuid)


__all__ = [
    "BACKENDS", "ISOLATED", "NO_ISOLATION", "Mount", "NoSandbox", "ProcessDied", "ProtocolError",
    "ReplyTimeout", "RunResult", "Sandbox", "SandboxConfig", "SandboxLimits", "SandboxProcess",
    "get_sandbox",
]
