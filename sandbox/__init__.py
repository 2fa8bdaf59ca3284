"""Sandbox backends. Trusted code: it starts untrusted code, it never imports it.

`get_sandbox("auto")` picks the strongest backend this host has: docker (when an image is
configured), else bwrap. It never picks `process`, which does not hide the file system: that one
runs only when asked for by name.
"""

from __future__ import annotations

import importlib
import pkgutil
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


def _discover() -> dict[str, type[Sandbox]]:
    """The backends: this package's modules that define `BACKEND` (the registry is the folder;
    sandbox/trusted.py defines none: no setting or name reaches it)."""
    found = {}
    for module in pkgutil.iter_modules(__path__):
        backend = getattr(importlib.import_module(f"{__name__}.{module.name}"), "BACKEND", None)
        if backend is not None:
            found[backend.name] = backend
    return found


BACKENDS: dict[str, type[Sandbox]] = _discover()


def preference(backends: dict[str, type[Sandbox]]) -> tuple[str, ...]:
    """What `auto` tries, in order: the backends with an `auto_rank`, lowest first."""
    return tuple(sorted((n for n, b in backends.items() if b.auto_rank is not None),
                        key=lambda n: backends[n].auto_rank))


# docker counts as available only when an image is configured and the engine answers
PREFERENCE = preference(BACKENDS)
ISOLATED = tuple(n for n in PREFERENCE if BACKENDS[n].isolates_filesystem)


class NoSandbox(ValueError):
    """No backend that isolates submissions on this host (or the one named is missing)."""


NO_ISOLATION = ("no sandbox that isolates submissions is available on this host: "
                + ", or ".join(BACKENDS[n].needs for n in sorted(ISOLATED))
                + "; `--sandbox process` runs submissions without file-system isolation "
                "(development only)")


def choose(name: str, config: SandboxConfig) -> type[Sandbox]:
    """The backend `name` names here (`auto`: the first available of PREFERENCE), available on
    this host; NoSandbox says what is missing."""
    if name == "auto":
        name = next((n for n in PREFERENCE if BACKENDS[n].available(config)), None)
        if name is None:
            raise NoSandbox(NO_ISOLATION)
    if name not in BACKENDS:
        raise NoSandbox(f"unknown sandbox backend {name!r}; known: {', '.join(BACKENDS)}")
    backend = BACKENDS[name]
    if not backend.available(config):
        raise NoSandbox(f"sandbox backend {name!r} is not available on this host" + (
            "; " + NO_ISOLATION if backend.isolates_filesystem else f" ({backend.needs})"))
    return backend


def get_sandbox(name: str = "auto", config: SandboxConfig | None = None,
                devices: Sequence[str] = (), gpu_uuid: str | None = None) -> Sandbox:
    """A backend by name, built from `config` (the defaults when None: no docker image);
    `devices` are the accelerator device nodes its runs may open and `gpu_uuid` the one NVIDIA
    GPU a container gets."""
    config = config or SandboxConfig()
    return choose(name, config).from_config(config, devices=devices, gpu_uuid=gpu_uuid)


__all__ = [
    "BACKENDS", "ISOLATED", "NO_ISOLATION", "PREFERENCE", "Mount", "NoSandbox", "ProcessDied",
    "ProtocolError",
    "ReplyTimeout", "RunResult", "Sandbox", "SandboxConfig", "SandboxLimits", "SandboxProcess",
    "choose", "get_sandbox",
]
