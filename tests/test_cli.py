import json
import os
import shutil
import subprocess
import sys

import pytest

from judge.problem.schema import problem_folders
from tests.conftest import PROBLEMS

VA = PROBLEMS / "vector_add"


def kjudge(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "judge.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


def test_judge_accepted_prints_a_table_and_exits_0():
    out = kjudge("judge", VA, VA / "solutions/AC/loop.cpp")
    assert out.returncode == 0, out.stderr
    assert "verdict AC" in out.stdout and "n100003" in out.stdout
    assert "ran on " in out.stdout and "sandbox " in out.stdout


def test_the_table_shows_the_gpu_state_around_the_timing():
    from judge.judging.record import JudgeResult
    from judge.judging.report import table
    from judge.verdicts import Verdict

    state = {"sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "temperature_c": 51, "power_w": 420.5,
             "throttle_reasons": ["sw_power_cap"]}
    result = JudgeResult("p", "v", "cuda", Verdict.AC, applied={
        "device": "cuda:0", "device_model": "NVIDIA H200", "sandbox": "docker",
        "toolchain": "nvcc 13.0", "gpu_state": {"before": state, "after": state}})
    text = table(result)
    assert "ran on NVIDIA H200 (cuda:0), sandbox docker" in text
    assert "gpu after timing:  SM 1980 MHz, memory 3201 MHz, 51 C, 420.5 W, throttled: sw_power_cap" \
        in text


def test_judge_json_and_csv(tmp_path):
    csv_file = tmp_path / "run.csv"
    out = kjudge("judge", VA, VA / "solutions/WA/off_by_one.cpp", "--json", "--csv", csv_file)
    assert out.returncode == 1
    data = json.loads(out.stdout)
    for key in ("verdict", "score", "speedup", "language", "compile_log", "time_ms",
                "memory_mb", "memory_measure", "wall_s", "overhead_s", "tests"):
        assert key in data
    assert data["verdict"] == "WA" and data["language"] == "cpp"
    assert data["requested"] == {"language": "inferred", "device": "auto", "sandbox": "auto"}
    assert data["applied"]["device"] == "cpu" and data["applied"]["sandbox"] in ("bwrap", "process")
    assert data["applied"]["versions"]["torch"]
    for key in ("name", "verdict", "matched_ratio", "max_abs_err", "max_rel_err", "time_ms",
                "baseline_ms", "speedup"):
        assert key in data["tests"][0]
    rows = csv_file.read_text().splitlines()
    assert rows[0].startswith("schema_version,api,language,case,n,status,time_ms")
    assert rows[1].startswith("1,vector_add,cpp,tiny,7,failed") and ",WA," in rows[1]


@pytest.mark.parametrize("args", [
    ("judge", VA, "missing.cpp"),
    ("judge", VA, VA / "solutions/AC/loop.cpp", "--lang", "maca"),
    ("judge", PROBLEMS, VA / "solutions/AC/loop.cpp"),
    ("judge", VA, VA / "statement.md"),
    ("judge", VA, VA / "templates/cuda.cu", "--device", "cpu"),
    ("judge", VA, VA / "solutions/AC/loop.cpp", "--device", "tpu"),
])
def test_bad_input_exits_2(args):
    out = kjudge(*args)
    assert out.returncode == 2 and out.stderr.startswith("kjudge: ")


def test_compile_error_exits_1_and_shows_the_log():
    out = kjudge("judge", VA, VA / "solutions/CE/missing_semicolon.cpp")
    assert out.returncode == 1 and "verdict CE" in out.stdout and "error" in out.stdout


def record(name, tests):
    return {"tests": [{"name": n, "verdict": v, "time_ms": t} for n, v, t in tests]}


def test_compare_exit_codes(tmp_path):
    base = record("a", [("t1", "AC", 1.0), ("t2", "AC", 1.0), ("t3", "WA", None),
                        ("t4", "AC", 1.0), ("t5", "WA", None)])
    same = record("b", [("t1", "AC", 1.01), ("t2", "AC", 0.5), ("t3", "AC", 1.0),
                        ("t5", "WA", None), ("t6", "AC", 2.0)])
    worse = record("c", [("t1", "AC", 1.5), ("t2", "RE", None)])
    dup = record("d", [("t1", "AC", 1.0), ("t1", "AC", 1.0)])
    files = {}
    for name, data in {"base": base, "same": same, "worse": worse, "dup": dup}.items():
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(data))
    fine = kjudge("compare", files["base"], files["same"])
    assert fine.returncode == 0
    for status in ("compared", "recovered", "missing", "both_failed", "new"):
        assert status in fine.stdout
    bad = kjudge("compare", files["base"], files["worse"], "--fail-on-regression", "10")
    assert bad.returncode == 1 and "regression" in bad.stdout and "candidate_failed" in bad.stdout
    assert kjudge("compare", files["base"], files["dup"]).returncode == 2
    assert kjudge("compare", files["base"], tmp_path / "nope.json").returncode == 2


def test_problem_new_validates_and_lists(tmp_path):
    out = kjudge("problem", "new", "my_op", "--dir", tmp_path)
    assert out.returncode == 0, out.stderr
    assert kjudge("problem", "new", "my_op", "--dir", tmp_path).returncode == 2
    assert kjudge("problem", "new", "Bad-Slug", "--dir", tmp_path).returncode == 2
    validate = kjudge("problem", "validate", tmp_path / "my_op")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert "FAIL" not in validate.stdout and "ok   expected AC" in validate.stdout
    listing = kjudge("problem", "list", "--dir", tmp_path)
    assert "my_op" in listing.stdout


def test_validate_fails_when_a_self_test_gets_another_verdict(tmp_path):
    kjudge("problem", "new", "broken", "--dir", tmp_path)
    folder = tmp_path / "broken"
    solutions = folder / "solutions"
    accepted, wrong = (solutions / "AC/loop.cpp").read_text(), (
        solutions / "WA/off_by_one.cpp").read_text()
    shutil.rmtree(solutions)  # the other self-tests pass: `problem new` validates (above)
    for path, source in (("AC/off.cpp", wrong), ("WA/loop.cpp", accepted)):
        (solutions / path).parent.mkdir(parents=True)
        (solutions / path).write_text(source)
    out = kjudge("problem", "validate", folder)
    assert out.returncode == 1 and "FAIL expected AC  got WA" in out.stdout
    assert "FAIL expected WA  got AC" in out.stdout


def test_validate_reports_schema_errors():
    out = kjudge("problem", "validate", PROBLEMS)
    assert out.returncode == 1 and "INVALID" in out.stdout and "problem.yaml" in out.stdout


@pytest.mark.parametrize("slug", [
    # softmax's notes read measured times (a busy host's slower calls made its tiny point
    # resolvable in one run beside other tests)
    pytest.param(p.name, marks=[pytest.mark.quiet] if p.name == "softmax" else [])
    for p in problem_folders(PROBLEMS)])
def test_bundled_problems_validate_with_their_self_tests(slug):
    out = kjudge("problem", "validate", PROBLEMS / slug)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FAIL" not in out.stdout
    if slug == "softmax":  # its 3x5 sample point is timed too: far too short to resolve
        assert "note" in out.stdout and "<timing tiny>  " in out.stdout
        assert "not resolvable" in out.stdout and "Resolvable from" in out.stdout


def test_validate_names_the_points_too_short_to_resolve():
    """Issue 42: a point whose baseline calls are too short for the judge to resolve beyond its
    harness's own work does not count in the score; the organizer is told which, and from what
    size it would (the largest dimension scaled by the call time it needs)."""
    from judge.judging.record import JudgeResult, TestReport
    from judge.tooling.selftest import resolution_outcomes
    from judge.verdicts import Verdict

    def point(name, n, ms, from_ms):
        return TestReport(name, verdict=Verdict.AC, params={"n": n}, time_ms=ms, baseline_ms=ms,
                          harness_ms=0.001, baseline_resolvable_from_ms=from_ms)

    result = JudgeResult(verdict=Verdict.AC, tests=[point("tiny", 7, 0.002, 0.05),
                                                    point("big", 10**6, 1.0, 0.5)])
    (note,) = resolution_outcomes(result)
    assert note.status == "note" and str(note.path) == "<timing tiny>"
    assert "n=175" in note.detail and "50 µs" in note.detail  # 25 times the work
    result.tests[1].baseline_resolvable_from_ms = 2.0
    assert [o.status for o in resolution_outcomes(result)] == ["note", "note", "warn"]


def test_image_check_prints_the_versions_inside():
    from tests.conftest import docker_test_image

    image = docker_test_image()
    if image is None:
        pytest.skip("no docker engine or test image here")
    out = kjudge("image", "check", image, "--host-python")
    assert out.returncode == 0, out.stderr
    for name in ("python", "torch", "triton", "tilelang", "g++", "nvcc"):
        assert name in out.stdout
    assert kjudge("image", "check", "kjudge-test:latest").returncode == 2  # not pinned


def test_commands_that_do_not_judge_never_import_torch():
    """`kjudge status`, `submit`, `leaderboard`, `export`, `user` and the problem commands start
    without torch (~2 s to import): the CLI's own modules and the command's path stay clear of
    it. Measured in a fresh interpreter, since this one has torch loaded."""
    probe = ("import sys; from judge import cli; parser = cli.build_parser(); "
             "parser.parse_args(['status', '1']); parser.parse_args(['leaderboard']); "
             "print(sorted(m for m in ('torch', 'judge.judging.pipeline') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_the_api_process_never_imports_torch(tmp_path):
    """An API process only stores and routes judgings: its start (settings, the device it routes
    to by default, the app) never imports torch, which would cost it ~2 s and ~300 MB."""
    probe = ("import sys; from judge.service.api import create_app; "
             "from judge.settings import settings; settings(); create_app(janitor=False); "
             "print(sorted(m for m in ('torch', 'judge.judging.pipeline') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "KJUDGE_DATA_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_the_cli_board_marks_unattempted_and_pending_cells():
    from judge.commands.client import board_text

    board = {"problems": ["vector_add", "softmax"], "teams": False, "rows": [
        {"rank": 1, "name": "alice", "total": 12.5, "problems": {"vector_add": 12.5},
         "pending": {"softmax": 2}},
        {"rank": None, "name": "bob", "total": 0.0, "problems": {}}]}
    header, alice, bob = board_text(board).splitlines()
    assert header.split()[:3] == ["rank", "user", "total"]
    assert alice.split() == ["1", "alice", "12.50", "12.50", "–", "+2?"]
    assert bob.split() == ["-", "bob", "0.00", "–", "–"]
