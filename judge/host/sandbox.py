"""The sandbox this host is configured for (judge/settings.py: KJUDGE_SANDBOX and the docker
settings), showing its runs one device."""

from __future__ import annotations

from judge.host.device import DeviceInfo, device_nodes
from judge.settings import settings
from sandbox import Sandbox, get_sandbox


def sandbox_for(device: DeviceInfo, name: str | None = None) -> Sandbox:
    """The backend `name` (default: the `sandbox` setting; `auto` picks docker when an image is
    set, else bwrap) with the device nodes and GPU of `device`."""
    config = settings()
    return get_sandbox(name or config.sandbox, config.sandbox_config(),
                       devices=device_nodes(device), gpu_uuid=device.uuid)
