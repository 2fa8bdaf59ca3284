import shutil

import pytest
import yaml

from judge.problem.schema import ProblemError, load_problem, problem_folders
from tests.conftest import PROBLEMS, ROOT


@pytest.fixture
def folder(tmp_path):
    target = tmp_path / "vector_add"
    shutil.copytree(PROBLEMS / "vector_add", target)
    return target


def edit(folder, change):
    path = folder / "problem.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))


def issues(folder) -> list[str]:
    with pytest.raises(ProblemError) as info:
        load_problem(folder)
    return [str(i) for i in info.value.issues]


@pytest.mark.parametrize("slug", [p.name for p in problem_folders(PROBLEMS)])
def test_bundled_problems_load(slug):
    problem = load_problem(PROBLEMS / slug)
    assert problem.tests_for("cpu") and problem.tests_for("cuda")
    assert any(t.sample for t in problem.tests)
    for language in problem.spec.languages:
        assert problem.template_path(language) is not None
    from judge.tooling.selftest import template_outcomes

    failing = [(o.path, o.detail) for o in template_outcomes(problem) if o.status != "ok"]
    assert not failing  # a template submitted unchanged must pass the problem's rules


def test_the_fault_benchmarks_problem_is_correctness_only():
    """tests/problems/quick_add (bench/faults.py): every point untimed, its AC self-test there."""
    problem = load_problem(ROOT / "tests" / "problems" / "quick_add")
    assert problem.tests_for("cpu") and not any(t.timed for t in problem.tests)
    assert (problem.path / "solutions" / "AC" / "loop.cpp").is_file()


def test_validation_fails_a_template_that_breaks_a_rule(folder):
    from judge.tooling.selftest import template_outcomes
    from judge.verdicts import Verdict

    template = folder / "templates" / "triton.py"
    template.write_text(template.read_text() + "\n\ndef helper(a, b):\n    return a.add(b)\n")
    outcomes = {str(o.path): o for o in template_outcomes(load_problem(folder))}
    bad = outcomes["templates/triton.py"]
    assert (bad.status, bad.got) == ("FAIL", Verdict.RV) and "no_torch_add" in bad.detail
    assert outcomes["templates/cpp.cpp"].status == "ok"


def test_matrix_expands_with_named_points(vector_add):
    names = [t.name for t in vector_add.tests]
    assert "n100003" in names and "n1048576" in names
    assert next(t for t in vector_add.tests if t.name == "n100003").params == {"n": 100003}


def test_unknown_key_names_file_field_and_fix(folder):
    edit(folder, lambda d: d["tolerance"].update(rtoll=1))
    [message] = issues(folder)
    assert message.startswith("problem.yaml: tolerance.rtoll:") and "remove this key" in message


def test_wrong_values_are_reported_per_field(folder):
    def change(d):
        d["languages"].append("fortran")
        d["signature"][0]["dtype"] = "float7"
        d["tolerance"]["matched_ratio"] = 1.5
        del d["title"]

    edit(folder, change)
    found = "\n".join(issues(folder))
    assert "languages[5]" in found and "signature[0]" in found
    assert "tolerance.matched_ratio" in found and "title" in found and "add this key" in found


def test_semantic_errors(folder):
    def change(d):
        d["signature"][0]["shape"] = ["m"]
        d["scoring"]["score"] = "100 * boost"
    edit(folder, change)
    found = "\n".join(issues(folder))
    assert "signature.a" in found and "unknown name 'm'" in found
    assert "scoring.score" in found


def test_bad_regex_names_the_rule(folder):
    edit(folder, lambda d: d["rules"][0].update(regex="("))
    [message] = issues(folder)
    assert message.startswith("problem.yaml: rules[0]:") and "regex" in message


def test_missing_files_and_folders(folder):
    (folder / "reference.py").unlink()
    shutil.rmtree(folder / "templates")
    shutil.rmtree(folder / "solutions" / "AC")
    (folder / "solutions" / "XX").mkdir()
    found = "\n".join(issues(folder))
    assert "reference.py: file not found" in found
    assert "templates/cpp.*" in found
    assert "solutions/XX" in found and "solutions/AC/" in found


def test_not_yaml_and_missing(tmp_path, folder):
    (folder / "problem.yaml").write_text("title: [unclosed")
    assert "not valid YAML" in issues(folder)[0]
    assert "not found" in issues(tmp_path)[0]


def test_version_changes_with_content(folder):
    before = load_problem(folder).version
    (folder / "statement.md").write_text("changed")
    assert load_problem(folder).version != before


def test_timing_bounds_are_checked(folder):
    edit(folder, lambda d: d["timing"].update(min_reps=50, max_reps=10))
    [message] = issues(folder)
    assert message.startswith("problem.yaml: timing:") and "min_reps" in message


def test_every_baseline_passes_its_own_tolerance_with_a_margin_of_seeds():
    """A baseline that fails on an unlucky seed turns a contestant's judging into SE: check 60."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).parents[1]
    done = subprocess.run([sys.executable, "bench/baseline_margin.py", "--seeds", "60"], cwd=root,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(" ok") >= 32  # every CPU test point of the ten problems


SHIFTED_CHECKER = '''
from checkers import allclose


def check(out, ref, *, rtol, atol, matched_ratio, offset=0.0):
    """Right when out = ref + offset (a checker that takes an argument of its own)."""
    return allclose.check(out, ref + offset, rtol=rtol, atol=atol, matched_ratio=matched_ratio)
'''


def test_a_checker_takes_its_arguments_from_the_problem(folder, cpu, default_sandbox):
    """`checker: {name, args}`: the arguments reach the checker at every check of a judging;
    validation names an argument the checker does not take, and a tolerance given as one."""
    from judge.judging.pipeline import JudgeOptions, judge_source
    from judge.verdicts import Verdict

    (folder / "shifted.py").write_text(SHIFTED_CHECKER)
    loop = (folder / "solutions/AC/loop.cpp").read_text()

    def judged(args: dict) -> Verdict:
        edit(folder, lambda d: d.update(checker={"name": "shifted.py", "args": args}))
        return judge_source(load_problem(folder), loop, language="cpp", device=cpu,
                            sandbox=default_sandbox,
                            options=JudgeOptions(timing=False, tests=["tiny"])).verdict

    assert judged({"offset": 0.0}) is Verdict.AC
    assert judged({"offset": 1.0}) is Verdict.WA  # the argument was used: c = a + b is now wrong
    edit(folder, lambda d: d.update(checker={"name": "shifted.py", "args": {"ofset": 1}}))
    [typo] = issues(folder)
    assert "checker.args.ofset" in typo and "takes no argument 'ofset'" in typo and "offset" in typo
    edit(folder, lambda d: d.update(checker={"name": "allclose", "args": {"rtol": 0.1}}))
    [tolerance] = issues(folder)
    assert "checker.args.rtol" in tolerance and "tolerance" in tolerance
    edit(folder, lambda d: d.update(checker={"name": "exact", "args": {"offset": 1}}))
    [builtin] = issues(folder)
    assert "exact takes no argument 'offset'" in builtin and "tolerance only" in builtin
    edit(folder, lambda d: d.update(checker="exact"))  # the short form still loads
    assert load_problem(folder).spec.checker.name == "exact"


FRAGILE_CHECKER = '''
from checkers import allclose


def check(out, ref, *, rtol, atol, matched_ratio):
    """Divides by the output's largest value: an answer of zeros was never foreseen."""
    scale = 1.0 / float(out.abs().max())
    return allclose.check(out * scale, ref * scale, rtol=rtol, atol=atol,
                          matched_ratio=matched_ratio)
'''


def test_validation_guesses_go_through_the_problems_checker(folder, cpu):
    """The zeros and constant guesses are checked by the problem's own checker, on the judge's
    side: both refused by vector_add's; a checker that raises on zeros is a FAIL row naming the
    error, not a crash of `validate`."""
    from judge.tooling.selftest import strength_outcomes

    outcomes = strength_outcomes(load_problem(folder), cpu)
    assert [(str(o.path), o.status, o.got.value) for o in outcomes] == [
        ("<all zeros>", "ok", "WA"), ("<a constant>", "ok", "WA")]
    (folder / "fragile.py").write_text(FRAGILE_CHECKER)
    edit(folder, lambda d: d.update(checker="fragile.py"))
    [failed] = strength_outcomes(load_problem(folder), cpu)
    assert failed.status == "FAIL" and "ZeroDivisionError" in failed.detail, failed
