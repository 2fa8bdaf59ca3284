from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"
os.environ.setdefault("KJUDGE_CACHE_DIR", tempfile.mkdtemp(prefix="kjudge-test-cache-"))


@pytest.fixture(scope="session")
def cpu():
    from judge.device import detect

    return detect("cpu")


@pytest.fixture(scope="session")
def vector_add():
    from judge.problem import load_problem

    return load_problem(PROBLEMS / "vector_add")


@pytest.fixture(scope="session", params=["process", "bwrap"])
def sandbox(request):
    from sandbox import get_sandbox

    return get_sandbox(request.param)


@pytest.fixture(scope="session")
def default_sandbox():
    from sandbox import get_sandbox

    return get_sandbox("auto")
