"""The docs as a reader meets them: the README's quick start and contest walkthrough run as they
stand against a live server; the API reference is the served routes'; nothing names a file
outside the repository; one torch version is said everywhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import PROBLEMS, ROOT
from tests.server.stack import Stack

README = ROOT / "README.md"
DOCUMENTED_SERVER = "http://127.0.0.1:8000"  # what the docs say; the test's server is elsewhere


def blocks(text: str) -> list[str]:
    """The ```sh blocks of a Markdown text, in order."""
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def quick_start_commands() -> str:
    """The quick start's shell lines after `make serve` (which the test's own server stands
    for), the venv's activation left to PATH."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    _, commands = blocks(section)
    return "\n".join(line for line in commands.splitlines() if not line.startswith(". "))


def walkthrough() -> str:
    text = README.read_text()
    marked = text.split("<!-- walkthrough:start -->", 1)[1].split("<!-- walkthrough:end -->")[0]
    [block] = blocks(marked)
    return block


@pytest.mark.slow
@pytest.mark.quiet  # its final board must show timed results, which a busy host may hold
def test_the_quick_start_and_the_walkthrough_run_against_a_live_server(tmp_path):
    """In a checkout's layout: problems/, tests/, var/ (the server's data)."""
    work = tmp_path / "checkout"
    (work / "problems").mkdir(parents=True)
    shutil.copytree(PROBLEMS / "vector_add", work / "problems" / "vector_add")
    (work / "tests").symlink_to(ROOT / "tests")
    (work / "var").symlink_to(tmp_path / "data", target_is_directory=True)
    stack = Stack(tmp_path, None, "embedded", extra_env={"KJUDGE_PROBLEMS": str(work / "problems")})
    try:
        stack.serve()
        script = "\n".join([quick_start_commands(), walkthrough()]).replace(
            DOCUMENTED_SERVER, stack.url)
        env = {**stack.env, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
        for name in ("KJUDGE_SERVER", "KJUDGE_TOKEN"):
            env.pop(name, None)
        ran = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env,
                             capture_output=True, text=True, timeout=900)
        out = ran.stdout + ran.stderr
        assert ran.returncode == 0, out + stack.logs()
    finally:
        stack.close()
    assert "verdict AC" in out and "in contest class" in out
    assert "contest class created" in out and "Kernels 101" in out
    assert "imported" in out and "p_76_gemm_add_relu" in out
    assert "+1?" in out  # bob's submission after the freeze, pending on the students' board
    assert "the final board is published" in out
    final = out.rsplit("the final board is published", 1)[1]
    assert re.search(r"^\s+1 alice\s", final, re.M), final  # alice leads the final board
    results = (work / "results.csv").read_text()
    assert "my_add" in results and "alice" in results


def test_the_api_reference_is_the_served_routes(tmp_path, monkeypatch):
    from judge.service.api import reference

    monkeypatch.setenv("KJUDGE_DATA_DIR", str(tmp_path))
    written = (ROOT / "docs" / "api.md").read_text()
    assert written == reference.current(), (
        "docs/api.md is out of date: python -m judge.service.api.reference > docs/api.md")


def tracked_text_files() -> list:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    suffixes = {".md", ".py", ".sh", ".yaml", ".yml", ".toml", ".js", ".html", ".cfg"}
    return [ROOT / name for name in listed
            if (ROOT / name).suffix in suffixes or (ROOT / name).name in ("Makefile",)
            or (ROOT / name).name.startswith("Dockerfile")]


OUTSIDE = re.compile(r"\.\./shared|\blent\b|\bdevice tool\b|\blease\b", re.I)


def test_nothing_names_a_file_outside_the_repository_or_how_its_machines_are_lent():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in tracked_text_files() if path.is_file() and path != ROOT / __file__
             for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             if OUTSIDE.search(line) and "OUTSIDE = re.compile" not in line]
    assert found == []


def test_one_torch_version_is_said_everywhere():
    pinned = re.search(r"^TORCH_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M)[1]
    said = {
        "deploy/Dockerfile": re.search(r"TORCH_SPEC=torch==(\S+)",
                                       (ROOT / "deploy/Dockerfile").read_text())[1],
        "deploy/local-images.sh": re.search(r"torch==([0-9.]+)",
                                            (ROOT / "deploy/local-images.sh").read_text())[1],
        "README.md": re.search(r"torch pinned to `([0-9.]+)`", README.read_text())[1],
    }
    assert {name: version for name, version in said.items() if version != pinned} == {}
