"""Hostile submissions, each trying one thing, judged under every sandbox backend.

Each file under submissions/ starts with comment lines:
  expect: VERDICT        the verdict the judge must give (AC: the attempt had no effect)
  problem: NAME          the problem it is judged on, bundled or of tests/problems (default
                         vector_add; replays go on matmul, where skipping the work would win big)
  backends: bwrap docker the backends that defend it (default: all three); the process
                         backend isolates nothing and is listed only where it holds
  timing: yes            judge with timing (the trick targets the timing run)
  flag: TEXT             the judging must carry a flag containing TEXT (`charged`: and be held
                         by the clock; `batch`: held for batches computed ahead of their calls)
  control: PATH          an honest submission (in the problem folder) judged alike: an AC attack
                         must not score a speedup above the control's beyond the noise
  gain: none             with a control: the attack's is the control's kernel, so its speedup
                         must stay within the judge's own spread of the control's (GAIN_NOISE),
                         not only short of a doubling
  calls: POINT N         the attack acts in one call in a few of POINT's timed calls: a
                         judging that timed fewer than N there gave it no call to act in
                         (a loaded host stops a point after 3 rounds), so its AC says nothing
                         and it is judged again, up to RETRIES_FOR_CALLS times
  threat: …              what it tries (see SECURITY.md)
Submissions that succeed at an attack deliberately answer wrong, so a leak shows as WA.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from judge.judging.pipeline import JudgeOptions, judge_source
from judge.languages.base import cache_root
from judge.problem.schema import load_problem
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS, ROOT, make_sandbox

TEST_PROBLEMS = ROOT / "tests" / "problems"
SUBMISSIONS = sorted((Path(__file__).parent / "submissions").iterdir())
BACKENDS = ("process", "bwrap", "docker")
CONTROL_NOISE = 1.5
# one source judged twice differs by ±2 % at the points the score counts here; the trims of
# issue 42 gained 7 % (native) and 23 % (Python) on the judge before it
GAIN_NOISE = 1.06
RETRIES_FOR_CALLS = 3


def header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines()[:10]:
        match = re.match(r"^\s*(?://|#)\s*(\w+):\s*(.+)$", line)
        if match:
            fields[match.group(1)] = match.group(2).strip()
    return fields


def cases():
    for path in SUBMISSIONS:
        meta = header(path)
        allowed = meta.get("backends", " ".join(BACKENDS)).split()
        for backend in BACKENDS:
            marks = [] if backend in allowed else [pytest.mark.skip(
                reason=f"the {backend} backend does not defend this (see SECURITY.md)")]
            if meta.get("timing") == "yes" and ("control" in meta or "flag" in meta):
                marks.append(pytest.mark.quiet)  # it reads measured times: a speedup, a charge
            yield pytest.param(path, backend, id=f"{path.stem}-{backend}", marks=marks)


def too_few_calls(meta: dict[str, str], result) -> bool:
    """Whether an AC judging timed too few calls at the point the attack acts at (`calls`)."""
    if "calls" not in meta or result.verdict is not Verdict.AC:
        return False
    name, need = meta["calls"].split()
    point = {t.name: t for t in result.tests}[name]  # a KeyError names a point not there
    return (point.samples or 0) * (point.batch_calls or 0) < int(need)


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    """Bundled problems with a small memory limit, so that a memory bomb ends quickly, and a
    timing budget of 1 s a point (the judge's clock rarely meets its 1 % stop rule on a shared
    2-core host before the budget; a working attack shows at any budget)."""
    loaded = {}

    def get(name: str):
        if name not in loaded:
            folder = tmp_path_factory.mktemp("hostile") / name
            bundled = PROBLEMS / name
            shutil.copytree(bundled if bundled.is_dir() else TEST_PROBLEMS / name, folder)
            spec = folder / "problem.yaml"
            spec.write_text(spec.read_text().replace("memory_mb: 4096", "memory_mb: 1024")
                            .replace("max_s: 3.0", "max_s: 1.0"))
            loaded[name] = load_problem(folder)
        return loaded[name]

    return get


@pytest.fixture(scope="module")
def sandboxes():
    return {}


@pytest.mark.parametrize("path,backend", list(cases()))
def test_hostile_submission(path, backend, problems, cpu, sandboxes, monkeypatch):
    if backend not in sandboxes:
        sandboxes[backend] = make_sandbox(backend)
    meta = header(path)
    problem = problems(meta.get("problem", "vector_add"))
    monkeypatch.setenv("KJUDGE_SECRET_CANARY", "judge-secret")
    # each point timed for a full second, whatever cap the other tests run under: an attack that
    # acts in one timed call in forty must meet the checks
    monkeypatch.setenv("KJUDGE_MAX_POINT_S", "1")
    source = (path.read_text()
              .replace("@PROBLEM_DIR@", str(problem.path))
              .replace("@REPO@", str(ROOT))
              .replace("@CACHE_DIR@", str(cache_root()))
              .replace("@DATABASE@", str(ROOT / "var" / "kjudge.db")))
    # a process of the host, outside any sandbox, that no submission may reach
    sentinel = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        for _ in range(RETRIES_FOR_CALLS):
            result = judge_source(problem, source, filename=path.name, device=cpu,
                                  sandbox=sandboxes[backend],
                                  options=JudgeOptions(timing=meta.get("timing") == "yes"))
            assert sentinel.poll() is None, "the submission killed a process of the host"
            if not too_few_calls(meta, result):
                break
    finally:
        sentinel.kill()
        sentinel.wait()
    detail = result.message or next((t.message for t in result.tests
                                     if t.verdict not in (None, Verdict.AC)), "")
    assert result.verdict is Verdict[meta["expect"]], f"{result.verdict}: {detail}"
    if "flag" in meta:
        assert any(meta["flag"] in flag for flag in result.flags), result.flags
        if meta["flag"] == "charged":  # a forgery caught is held off the boards for review
            assert result.needs_review and any(
                hold["by"] in ("clock", "roofline") for hold in result.holds), result.holds
        if meta["flag"] == "batch":  # calls computed ahead of their turn: held too
            assert result.needs_review and any(
                hold["by"] == "batch" for hold in result.holds), result.holds
    for point in result.tests:  # whatever the trick, no point is charged under its floor
        if point.time_ms is not None and point.floor_ms is not None:
            assert point.time_ms >= point.floor_ms, (point.name, point.time_ms, point.floor_ms)
    if "control" in meta:
        def judged(code: str, filename: str):
            return judge_source(problem, code, filename=filename, device=cpu,
                                sandbox=sandboxes[backend],
                                options=JudgeOptions(timing=meta.get("timing") == "yes"))

        control = judged((problem.path / meta["control"]).read_text(), meta["control"])
        # the same source scores within ~30 % on a shared 2-core host; a working attack on the
        # baseline doubles the speedup
        noise = GAIN_NOISE if meta.get("gain") == "none" else CONTROL_NOISE
        if result.speedup > noise * control.speedup:
            # a gain shows in every pair of judgings, a busy host's noise seldom twice (one
            # CI run read lazy_mapping at 1.085 against its control's 1.000; it passes
            # otherwise): judged again, both pairs must be over to fail
            first = (result.speedup, control.speedup)
            again = judged(source, path.name).speedup, judged(
                (problem.path / meta["control"]).read_text(), meta["control"]).speedup
            assert again[0] <= noise * again[1], (first, again)
    assert not (ROOT / "HACKED").exists() and not (problem.path / "HACKED").exists()
    assert not Path("/usr/HACKED").exists()
