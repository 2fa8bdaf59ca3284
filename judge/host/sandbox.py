"""The sandbox this host is configured for (judge/settings.py: KJUDGE_SANDBOX and the docker
settings), showing its runs one device; and, for the device self-test alone, the strongest one
that works here."""

from __future__ import annotations

from judge.host.device import DeviceInfo, device_nodes
from judge.settings import Settings, settings
from sandbox import NoSandbox, Sandbox, SandboxConfig, get_sandbox
from sandbox.trusted import TrustedSandbox


def sandbox_config(config: Settings) -> SandboxConfig:
    """What the sandbox backends are built from (sandbox/base.py SandboxConfig)."""
    return SandboxConfig(
        docker_image=config.docker_image, docker_python=config.docker_python,
        docker_host_python=config.docker_host_python, docker_cpus=config.docker_cpus,
        owner=config.sandbox_owner,
        system_paths=tuple(p for p in config.sandbox_paths.split(":") if p))


def sandbox_for(device: DeviceInfo, name: str | None = None) -> Sandbox:
    """The backend `name` (default: the `sandbox` setting; `auto` picks docker when an image is
    set, else bwrap) with the device nodes and GPU of `device`."""
    config = settings()
    return get_sandbox(name or config.sandbox, sandbox_config(config),
                       devices=device_nodes(device), gpu_uuid=device.uuid)


def sandbox_for_self_tests(device: DeviceInfo) -> Sandbox:
    """For code the judge's organizers wrote (bundled self-tests, the judge's test kernels) on a
    GPU machine rented for a self-test: the strongest backend that works here — an isolating one, else
    `process` (namespaces, host files visible), else `trusted` (sandbox/trusted.py: nothing
    isolated). Never a default for anything else."""
    for name in ("auto", "process"):
        try:
            return sandbox_for(device, name)
        except NoSandbox:
            continue
    return TrustedSandbox()


def isolation(sandbox: Sandbox) -> dict:
    """What a run in `sandbox` is kept from, and which limits it gets here (a cgroup is made and
    removed to tell): said with every self-test table."""
    return {"sandbox": sandbox.name, "isolates": sandbox.keeps_out,
            "limits": sandbox.limits_applied()}
