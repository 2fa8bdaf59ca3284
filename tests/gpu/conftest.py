"""What the device tests share: the GPU and the sandbox they judge in."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def cuda():
    from judge.host.device import detect

    return detect("cuda")


@pytest.fixture(scope="session")
def gpu_sandbox(cuda):
    """The strongest sandbox that works here, with the GPU's device nodes (a rented machine may
    have no bubblewrap or Docker: these kernels are the judge's own and its hostile tests',
    which the self-test runs only where one isolates them; see test_gpu_hostile.py)."""
    from judge.host.sandbox import sandbox_for_self_tests

    return sandbox_for_self_tests(cuda)
