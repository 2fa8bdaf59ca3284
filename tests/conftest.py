from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"


def pytest_configure(config):
    """Settings for the tests alone (the benches import this module for its helpers, and
    measured with a capped timing and a cold cache while they did)."""
    os.environ.setdefault("KJUDGE_CACHE_DIR", tempfile.mkdtemp(prefix="kjudge-test-cache-"))
    # Each test point timed for at most a second (the problems say 3): on a shared 2-core host
    # every point ran to its cap, a timed judging took ~11 s and the suite ~50 min. The timing's
    # code is the same at any cap; the tests that measure precision are bench/'s, not these.
    os.environ.setdefault("KJUDGE_MAX_POINT_S", "1")


@pytest.fixture(scope="session")
def cpu():
    from judge.host.device import detect

    return detect("cpu")


@pytest.fixture(scope="session")
def vector_add():
    from judge.problem.schema import load_problem

    return load_problem(PROBLEMS / "vector_add")


def docker_test_image() -> str | None:
    """The image built by tests/docker_image.sh (make test builds it), pinned by its id."""
    try:
        out = subprocess.run(["docker", "images", "-q", "--no-trunc", "kjudge-test:latest"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() \
        else None


def make_sandbox(name: str):
    from sandbox import get_sandbox
    from sandbox.docker import DockerSandbox

    if name != "docker":
        return get_sandbox(name)
    image = docker_test_image()
    if image is None:
        if os.environ.get("CI"):
            pytest.fail("no docker test image: run tests/docker_image.sh with dockerd running")
        pytest.skip("no docker engine or test image here")
    return DockerSandbox(image=image, host_python=True)


@pytest.fixture(scope="session", params=["process", "bwrap", "docker"])
def sandbox(request):
    return make_sandbox(request.param)


@pytest.fixture(scope="session")
def default_sandbox():
    from sandbox import get_sandbox

    return get_sandbox("auto")


def pytest_collection_modifyitems(config, items):
    """`long` tests come first (the parallel part's workers take the others around them, and
    none of them is left running alone at the end); `gpu` tests are skipped where no CUDA
    device is visible, and run everywhere else."""
    import torch

    items.sort(key=lambda item: "long" not in item.keywords)  # stable: the rest keep order
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device visible")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
