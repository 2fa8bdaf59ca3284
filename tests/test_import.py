"""`kjudge problem import`: FlashInfer-Bench, GPU MODE and KernelBench problems become folders
that validate, with the baseline AC, inputs from the judge's seed and what does not map refused
by name. The inputs are small example files in each format (tests/formats), no downloads."""

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from checkers import get_checker
from judge.judging.pipeline import JudgeOptions, judge_source
from judge.judging.reference import Reference
from judge.problem.importers import FORMATS, import_problem
from judge.problem.importers.draft import ImportFailure
from judge.problem.schema import ProblemError, load_problem
from judge.tooling.importing import ImportRequest, import_one
from judge.verdicts import Verdict
from tests.conftest import ROOT

FORMATS_DIR = ROOT / "tests" / "formats"
EXAMPLES = [
    ("flashinfer", "flashinfer/definitions/gemm_n256_k128.json"),
    ("flashinfer", "flashinfer/definitions/fp8_quant_h256.json"),
    ("flashinfer", "flashinfer/definitions/nvfp4_dequant_k128.json"),
    ("gpumode", "gpumode/vectoradd_py"),
    ("gpumode", "gpumode/fp8_mm"),
    ("gpumode", "gpumode/histogram_py"),
    ("kernelbench", "kernelbench/1_Square_matrix_multiplication_.py"),
    ("kernelbench", "kernelbench/55_conv_standard_2D__asymmetric_input__square_kernel.py"),
    ("kernelbench", "kernelbench/76_Gemm_Add_ReLU.py"),
]


def imported(tmp_path, fmt: str, source: str):
    path, draft = import_problem(fmt, FORMATS_DIR / source, None, tmp_path)
    return load_problem(path), draft


def test_the_formats_are_the_importer_modules():
    assert FORMATS == ("flashinfer", "gpumode", "kernelbench")


@pytest.mark.parametrize("fmt,source", EXAMPLES, ids=[s.split("/")[-1] for _, s in EXAMPLES])
def test_an_imported_problem_validates_and_its_baseline_is_accepted(tmp_path, cpu,
                                                                     default_sandbox, fmt, source):
    problem, draft = imported(tmp_path, fmt, source)
    assert problem.tests_for("cpu") and problem.tests_for("cuda")
    assert any(t.sample for t in problem.tests_for("cpu"))
    for language in problem.spec.languages:
        assert problem.template_path(language) is not None
    assert (problem.path / "source").is_dir() and draft.tolerance_note in (
        problem.path / "statement.md").read_text()
    ac = problem.path / "solutions" / "AC" / "baseline.py"
    result = judge_source(problem, ac.read_text(), device=cpu, sandbox=default_sandbox,
                          options=JudgeOptions(timing=False), filename="solutions/AC/baseline.py")
    assert result.verdict is Verdict.AC, result.message


@pytest.mark.parametrize("fmt,source", [EXAMPLES[0], EXAMPLES[4], EXAMPLES[7]],
                         ids=["flashinfer", "gpumode", "kernelbench"])
def test_inputs_come_from_the_judges_seed(tmp_path, fmt, source):
    problem, _ = imported(tmp_path, fmt, source)
    reference = Reference(problem, "cpu")
    test = problem.tests_for("cpu")[0]
    first, again, other = (reference.inputs(test, seed) for seed in (11, 11, 12))
    tensors = [n for n, v in first.items() if isinstance(v, torch.Tensor)]
    assert all(torch.equal(first[n], again[n]) for n in tensors)
    assert any(not torch.equal(first[n], other[n]) for n in tensors)


def test_packed_fp4_inputs_reach_run_kernel_as_they_were_drawn(tmp_path, cpu, default_sandbox):
    """FlashInfer's float4_e2m1 is torch's float4_e2m1fn_x2: reading the nibbles the wrong way
    round is WA."""
    problem, _ = imported(tmp_path, "flashinfer", "flashinfer/definitions/nvfp4_dequant_k128.json")
    assert problem.inputs[0].dtype == "float4_e2m1fn_x2" and problem.inputs[0].shape == ["M", 64]
    baseline = (problem.path / "baseline.py").read_text()
    swapped = baseline.replace("[raw & 15, raw >> 4]", "[raw >> 4, raw & 15]")
    assert swapped != baseline
    result = judge_source(problem, swapped, device=cpu, sandbox=default_sandbox,
                          options=JudgeOptions(timing=False), language="torch")
    assert result.verdict is Verdict.WA


def test_gpumode_fixed_seeds_are_not_used(tmp_path):
    """The task's own seed would give every judging the public data: not what is drawn."""
    problem, _ = imported(tmp_path, "gpumode", "gpumode/vectoradd_py")
    test = problem.tests_for("cpu")[0]
    drawn = Reference(problem, "cpu").inputs(test, 5)
    gen = torch.Generator().manual_seed(4242)  # tests[0]'s seed in task.yml
    public = torch.randn(127, 127, dtype=torch.float16, generator=gen)
    assert not torch.equal(drawn["A"], public)


def test_flashinfer_signature_axes_and_tolerance(tmp_path):
    problem, draft = imported(tmp_path, "flashinfer", "flashinfer/definitions/gemm_n256_k128.json")
    spec = problem.spec
    assert [(a.name, a.role, a.shape) for a in spec.signature] == [
        ("A", "input", ["M", 128]), ("B", "input", [256, 128]), ("C", "output", ["M", 256]),
        ("M", "scalar", None)]
    assert spec.checker.name == "either" and spec.tolerance.matched_ratio == 1.0
    # three workloads, two distinct sizes: two GPU points, the smaller one also on the CPU
    assert sorted(t.params["M"] for t in problem.tests_for("cuda")) == [7, 256]
    assert [t.params for t in problem.tests_for("cpu")] == [{"M": 7}]


def test_gpumode_shapes_fit_the_parameters_and_the_preallocated_output_stays_in_place(tmp_path):
    problem, draft = imported(tmp_path, "gpumode", "gpumode/fp8_mm")
    args = {a.name: a for a in problem.spec.signature}
    assert [a.name for a in problem.spec.signature] == ["a", "b", "a_scale", "b_scale", "c",
                                                        "m", "n", "k"]
    assert args["a"].dtype == "float8_e4m3fn" and args["c"].role == "output"
    assert args["b_scale"].shape == ["n // 128", "k // 128"]
    assert (problem.spec.tolerance.rtol, problem.spec.tolerance.atol) == (2e-2, 1e-3)
    timed = [t.name for t in problem.tests_for("cuda") if t.timed]
    assert timed == ["m1024_n1536_k7168", "m6144_n4608_k7168"]  # the benchmarks
    histogram, _ = imported(tmp_path, "gpumode", "gpumode/histogram_py")
    assert histogram.spec.checker.name == "exact"


def test_kernelbench_parameters_become_explicit_inputs(tmp_path):
    problem, _ = imported(tmp_path, "kernelbench",
                          "kernelbench/55_conv_standard_2D__asymmetric_input__square_kernel.py")
    args = {a.name: a for a in problem.spec.signature}
    assert args["conv2d_weight"].role == "input"
    assert args["conv2d_weight"].shape == ["out_channels", "in_channels", "kernel_size",
                                           "kernel_size"]
    full = next(t for t in problem.tests if t.name == "full")
    assert full.params["output_dim3"] == 1022 and full.params["width"] == 1024
    cpu = problem.tests_for("cpu")[0]
    case = Reference(problem, "cpu").case(cpu, seed=3)
    expected = torch.nn.functional.conv2d(case.inputs["x"], case.inputs["conv2d_weight"])
    assert torch.allclose(case.expected["output"], expected)


def test_a_fixed_data_input_is_a_todo_the_validator_refuses_until_done(tmp_path):
    path, _ = import_problem("flashinfer", FORMATS_DIR / "flashinfer/definitions/rmsnorm_h128.json",
                             None, tmp_path)
    with pytest.raises(ProblemError) as refused:
        load_problem(path)
    where = {(i.file, i.field) for i in refused.value.issues}
    assert ("problem.yaml", "line 3") in where and any(f == "reference.py" for f, _ in where)
    assert all("KJUDGE-TODO" in i.message for i in refused.value.issues)
    for name in ("problem.yaml", "reference.py"):  # the organizer fills them in
        file = path / name
        file.write_text("\n".join(line.split("# KJUDGE-TODO")[0].rstrip()
                                  for line in file.read_text().splitlines()) + "\n")
    problem = load_problem(path)
    assert [a.name for a in problem.spec.signature if a.role == "scalar"] == ["eps", "batch_size"]
    assert {t.params["eps"] for t in problem.tests} == {1e-6}


def _failure(tmp_path, fmt, source) -> ImportFailure:
    with pytest.raises(ImportFailure) as info:
        import_problem(fmt, source, None, tmp_path)
    return info.value


def test_what_does_not_map_is_refused_by_file_and_field(tmp_path):
    sampling = _failure(tmp_path, "flashinfer",
                        FORMATS_DIR / "flashinfer/definitions/top_k_sampling_v128.json")
    assert (sampling.file, sampling.field) == ("top_k_sampling_v128.json", "op_type")
    assert "distribution" in sampling.message

    folder = tmp_path / "fi"
    shutil.copytree(FORMATS_DIR / "flashinfer", folder)
    definition = folder / "definitions" / "gemm_n256_k128.json"
    data = json.loads(definition.read_text())
    data["inputs"]["A"]["dtype"] = "float8_e4m3fnuz"
    definition.write_text(json.dumps(data))
    dtype = _failure(tmp_path / "o1", "flashinfer", definition)
    assert dtype.field == "inputs.A.dtype" and "float8_e4m3fnuz" in dtype.message
    solution = folder / "solution.json"  # FlashInfer-Bench's solution format, several files
    solution.write_text(json.dumps({"name": "gemm_triton", "definition": "gemm_n256_k128",
                                    "spec": {"language": "triton", "entry_point": "main.py::run"},
                                    "sources": [{"path": "main.py", "content": ""},
                                                {"path": "kernel.py", "content": ""}]}))
    multi = _failure(tmp_path / "o5", "flashinfer", solution)
    assert multi.field == "sources" and "one file" in multi.message
    (folder / "workloads" / "gemm_n256_k128.jsonl").unlink()
    assert "no workloads" in _failure(tmp_path / "o2", "flashinfer", definition).message

    task = tmp_path / "gm"
    shutil.copytree(FORMATS_DIR / "gpumode", task)
    yml = task / "vectoradd_py" / "task.yml"
    yml.write_text(yml.read_text() + "\nmulti_gpu: true\n")
    multi = _failure(tmp_path / "o3", "gpumode", task / "vectoradd_py")
    assert (multi.file, multi.field) == ("task.yml", "multi_gpu")

    bench = tmp_path / "kb.py"
    bench.write_text("import torch\n\nclass Model(torch.nn.Module):\n    pass\n")
    missing = _failure(tmp_path / "o4", "kernelbench", bench)
    assert missing.field == "get_inputs" and "not defined" in missing.message


def test_an_existing_folder_is_not_overwritten(tmp_path):
    imported(tmp_path, "flashinfer", "flashinfer/definitions/gemm_n256_k128.json")
    again = _failure(tmp_path, "flashinfer",
                     FORMATS_DIR / "flashinfer/definitions/gemm_n256_k128.json")
    assert "not empty" in again.message


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
@pytest.mark.parametrize("fmt,source", [EXAMPLES[1], EXAMPLES[4]], ids=["fp8_out", "fp8_in"])
def test_the_cuda_starter_compiles_with_its_fp8_types(tmp_path, default_sandbox, fmt, source):
    from judge.host.device import DeviceInfo
    from judge.languages import get_language
    from sandbox import SandboxLimits

    problem, _ = imported(tmp_path, fmt, source)
    text = problem.template_path("cuda").read_text()
    assert "__nv_fp8_e4m3*" in text and "#include <cuda_fp8.h>" in text
    h200 = DeviceInfo("cuda", "cuda:0", "H200", 60 * 2**20, arch="sm_90a")
    limits = SandboxLimits(memory_mb=4096, pids=512)
    built = get_language("cuda").compile(text, h200, default_sandbox, limits, 120)
    assert built.ok, built.log


def test_either_fails_an_element_only_outside_both_bounds():
    """FlashInfer's rule: within max(atol, rtol·|ref|); allclose allows the sum."""
    ref = torch.tensor([1.0, 100.0, 0.0])
    got = ref + torch.tensor([0.015, 0.5, 0.01])  # each inside atol + rtol·|ref|
    either, allclose = get_checker("either"), get_checker("allclose")
    tol = dict(rtol=1e-2, atol=1e-2, matched_ratio=1.0)
    assert allclose(got, ref, **tol).passed
    report = either(got, ref, **tol)
    # 0.015 > max(0.01, 0.01): outside both; 0.5 <= 1.0 (rtol); 0.01 <= atol
    assert not report.passed and report.mismatches == 1 and report.worst[0].index == [0]


def test_the_cli_imports_and_names_a_refusal(tmp_path):
    import subprocess
    import sys

    def kjudge(*args):
        return subprocess.run([sys.executable, "-m", "judge.cli", *map(str, args)], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)

    done = kjudge("problem", "import", "--from", "kernelbench",
                  FORMATS_DIR / "kernelbench/76_Gemm_Add_ReLU.py", "--out", tmp_path / "gemm")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported") and "the baseline AC on the CPU" in done.stdout
    refused = kjudge("problem", "import", "--from", "flashinfer",
                     FORMATS_DIR / "flashinfer/definitions/top_k_sampling_v128.json",
                     "--dir", tmp_path)
    assert refused.returncode != 0 and "op_type: sampling" in refused.stderr


def test_an_import_that_fails_while_writing_leaves_no_folder(tmp_path, monkeypatch):
    from judge.problem.importers import draft

    def broken(language, signature):
        raise RuntimeError("disk full")

    monkeypatch.setattr(draft, "starter", broken)
    with pytest.raises(RuntimeError):
        import_problem("flashinfer", FORMATS_DIR / "flashinfer/definitions/gemm_n256_k128.json",
                       None, tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt,source", [EXAMPLES[4], EXAMPLES[8]], ids=["gpumode", "kernelbench"])
def test_on_several_threads_at_once_each_call_is_its_own(tmp_path, fmt, source):
    """The formats draw from the process's global RNG, and the judge draws a timed round's sets
    on every CPU at once: unguarded, a set came out of another's seed (an imported MSELoss's
    own baseline was SE, 'wrong on timed round 2'). It checks the kept calls so too: a
    KernelBench model's weights, swapped into its one module for each call, mixed (an imported
    Linear's baseline SE, 'wrong on cpu, timed round 30', one validate in two)."""
    problem, _ = imported(tmp_path, fmt, source)
    test = problem.tests_for("cpu")[0]
    assert Reference(problem, "cpu").differs_in_parallel(test, range(16)) == ""


# Files the importers failed on when whole corpora were imported (bench/corpora.py), each a kind:
# KernelBench's copied (tests/formats/kernelbench/SOURCE.md), GPU MODE's written in its format.
REGRESSIONS = [
    ("kernelbench", "kernelbench/94_MSELoss.py"),  # a 0-d output
    ("kernelbench", "kernelbench/100_HingeLoss.py"),  # sizes that a broadcast needs equal
    ("kernelbench", "kernelbench/23_Softmax.py"),  # outputs ~4e-6 under the format's atol 1e-4
    ("kernelbench", "kernelbench/33_BatchNorm.py"),  # buffers updated in place, a 0-d one
    ("kernelbench", "kernelbench/5_Matrix_scalar_multiplication.py"),  # forward(A, s: float)
    ("kernelbench", "kernelbench/66_Matmul_Dropout_Softmax.py"),  # random in training mode
    ("kernelbench", "kernelbench/4_Conv2d_Mish_Mish.py"),  # height = width = 256, no CPU point
    ("kernelbench", "kernelbench/3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU.py"),  # sum_weight
    ("kernelbench", "kernelbench/35_LSTM.py"),  # forward(x, h0=None, c0=None)
    ("gpumode", "gpumode/conv2d_py"),  # an output size - kernelsize + 1 wide
    ("gpumode", "gpumode/rownorm_py"),  # a check_implementation of its own
    ("gpumode", "gpumode/matmul_v2_py"),  # an input from torch.empty: each draw its own garbage
]


@pytest.mark.parametrize("fmt,source", REGRESSIONS, ids=[s.split("/")[-1] for _, s in REGRESSIONS])
def test_what_failed_in_the_corpora_imports_checked(tmp_path, default_sandbox, fmt, source):
    """Imported whole: the folder validates, its baseline is AC on the CPU and an answer of zeros
    and a constant answer are refused (tooling/importing.py's check)."""
    outcome = import_one(ImportRequest(fmt, tmp_path, sandbox=default_sandbox.name),
                         FORMATS_DIR / source)
    assert outcome.status == "imported", outcome.detail
    problem = load_problem(Path(outcome.path))
    assert problem.tests_for("cpu")
    names = {a.name for a in problem.spec.signature}
    present, absent = SIGNATURE_NAMES.get(source, ((), ()))
    assert set(present) <= names and not set(absent) & names, names


# What KernelBench leaves implicit, made explicit in the signature of a folder imported whole
# (read here rather than from a second conversion: these two take seconds to probe)
SIGNATURE_NAMES = {
    "kernelbench/35_LSTM.py": (["x"], ["h0"]),  # forward's optional h0 is not an input
    # the constant and the model's weight of the same name both kept
    "kernelbench/3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU.py": (
        ["sum_weight", "sum_weight_param"], []),
}


def _draft(source: str):
    from judge.problem.importers import convert

    fmt = "gpumode" if source.startswith("gpumode") else "kernelbench"
    return convert(fmt, FORMATS_DIR / source)


def _shapes(draft) -> dict:
    return {a["name"]: a.get("shape") for a in draft.signature}


def test_shapes_are_fitted_to_what_makes_them():
    hinge = _shapes(_draft("kernelbench/100_HingeLoss.py"))
    assert hinge["predictions"] == ["batch_size", "input_shape_0"] and hinge["output"] == []
    conv = _shapes(_draft("gpumode/conv2d_py"))
    assert conv["output"] == ["batch", "channels", "size - kernelsize + 1",
                              "size - kernelsize + 1"]
    assert _shapes(_draft("kernelbench/33_BatchNorm.py"))["bn_num_batches_tracked"] == []


def test_a_kernelbench_cpu_point_keeps_the_models_structure_and_fits():
    draft = _draft("kernelbench/4_Conv2d_Mish_Mish.py")
    cpu = next(t for t in draft.tests if "cpu" in t["devices"])
    full = next(t for t in draft.tests if "cuda" in t["devices"])
    assert full["params"]["height"] == full["params"]["width"] == 256
    assert cpu["params"]["kernel_size"] == 3 and cpu["params"]["batch_size"] < 64
    assert cpu["params"]["in_channels"] >= 8 and cpu["params"]["height"] >= 8


def test_what_kernelbench_leaves_implicit_is_made_explicit():
    scalar = _draft("kernelbench/5_Matrix_scalar_multiplication.py")
    assert {"name": "s", "role": "scalar", "dtype": "float32"} in scalar.signature
    assert all(t["params"]["s"] == 3.14 for t in scalar.tests)
    # 35_LSTM's h0 and 3_ConvTranspose3d's sum_weight: SIGNATURE_NAMES, on the imported folders
    dropout = _draft("kernelbench/66_Matmul_Dropout_Softmax.py")
    assert "_EVAL = True" in dropout.reference and "eval mode" in " ".join(dropout.notes)
    softmax = _draft("kernelbench/23_Softmax.py")
    assert softmax.tolerance["atol"] < 1e-6 < softmax.tolerance["rtol"]


def test_a_format_check_of_its_own_is_the_checker_and_judges_whole_calls(tmp_path):
    from checkers import check_outputs, get_checker

    path, draft = import_problem("gpumode", FORMATS_DIR / "gpumode/rownorm_py", None, tmp_path)
    assert draft.checker == "format_check.py"
    problem = load_problem(path)
    checker = get_checker(problem.spec.checker.name, problem.path)
    case = Reference(problem, "cpu").case(problem.tests_for("cpu")[0], seed=3)
    tol = dict(rtol=0.0, atol=0.0, matched_ratio=1.0)
    assert check_outputs(checker, case.expected, case.expected, case.inputs, **tol).passed
    flipped = {"output": -case.expected["output"]}  # unit rows, the wrong way: a property fails
    report = check_outputs(checker, flipped, case.expected, case.inputs, **tol)
    assert not report.passed and "point along" in report.message


def test_an_import_that_does_not_validate_leaves_nothing_unless_a_draft(tmp_path):
    source = FORMATS_DIR / "flashinfer/definitions/rmsnorm_h128.json"
    refused = import_one(ImportRequest("flashinfer", tmp_path), source)
    assert refused.status == "refused" and "KJUDGE-TODO" in refused.detail
    assert "--draft" in refused.detail and not any(tmp_path.iterdir())
    kept = import_one(ImportRequest("flashinfer", tmp_path, draft=True), source)
    assert kept.status == "draft" and Path(kept.path).is_dir()
    assert [p.name for p in tmp_path.iterdir()] == [Path(kept.path).name]


def test_a_folder_of_problems_imports_in_one_command(tmp_path):
    import subprocess
    import sys

    corpus = tmp_path / "level"
    corpus.mkdir()
    for name in ("94_MSELoss.py", "76_Gemm_Add_ReLU.py"):
        shutil.copy(FORMATS_DIR / "kernelbench" / name, corpus)
    (corpus / "99_Broken.py").write_text("import torch\nclass Model: pass\n")

    def kjudge(*args):
        return subprocess.run([sys.executable, "-m", "judge.cli", "problem", "import", "--from",
                               "kernelbench", corpus, "--dir", tmp_path / "out", "--no-check",
                               *args], cwd=ROOT, capture_output=True, text=True, timeout=600)

    done = kjudge()
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stderr  # one refused
    assert sum(line.startswith("imported") for line in lines) == 2
    assert any(line.startswith("refused") and "99_Broken.py" in line and "get_inputs" in line
               for line in lines)
    assert lines[-1] == "3 problems: 2 imported, 1 refused"
    again = kjudge()
    assert again.stdout.splitlines()[-1] == "3 problems: 2 skipped, 1 refused"
    forced = kjudge("--force")
    assert forced.stdout.splitlines()[-1] == "3 problems: 2 imported, 1 refused"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "p_76_gemm_add_relu", "p_94_mseloss"]


def test_folders_named_alike_in_one_import_keep_their_parents_names():
    from judge.problem.importers import folder_names

    a, b, c = Path("pmpp/conv2d_py"), Path("pmpp_v2/conv2d_py"), Path("pmpp/sort_py")
    assert folder_names("gpumode", [a, b, c]) == {a: "pmpp_conv2d_py", b: "pmpp_v2_conv2d_py",
                                                  c: "sort_py"}


def test_sizes_fit_the_smallest_expression_that_a_further_case_confirms():
    from judge.problem.importers.draft import fit_size

    cases = [{"t": t, "h": h, "g": g} for t, h, g in [(1, 256, 128), (2, 512, 128),
                                                     (3, 1024, 64), (4, 1024, 32)]]
    params = ["t", "h", "g"]
    assert fit_size([2, 4, 16, 32], cases, params) == "h // g"
    assert fit_size([256, 512, 1024, 1024], cases, params) == "h"
    assert fit_size([7, 7, 7, 7], cases, params) == 7
    assert fit_size([259, 516, 1029, 1030], cases, params) == "t + h + 2"
    assert fit_size([3, 5], cases[:2], params) is None  # two cases cannot confirm an affine fit


def test_a_reference_that_needs_a_gpu_is_imported_with_gpu_points_only(tmp_path, cpu,
                                                                        default_sandbox):
    from judge.tooling.selftest import run_self_tests

    outcome = import_one(ImportRequest("gpumode", tmp_path, sandbox=default_sandbox.name),
                         FORMATS_DIR / "gpumode/fp4like_py")
    assert outcome.status == "imported" and "GPU points only" in outcome.detail, outcome.detail
    problem = load_problem(Path(outcome.path))
    assert "Invalid scaling configuration" in problem.spec.gpu_only
    assert not problem.tests_for("cpu") and any(t.sample for t in problem.tests_for("cuda"))
    assert [a.name for a in problem.outputs] == ["c"]  # read from ref_kernel's `return c`
    assert "x2" in [a.name for a in problem.inputs]  # the unpacked `_`, named by position
    skipped = [o for o in run_self_tests(problem, cpu, default_sandbox) if o.status == "skip"]
    assert skipped and "no test point for the cpu device" in skipped[0].detail


def test_packages_the_format_imports_are_declared_and_checked(tmp_path):
    from judge.problem.importers import convert
    from judge.tooling.selftest import package_outcomes

    source = tmp_path / "1_Uses_yaml.py"
    source.write_text((FORMATS_DIR / "kernelbench/76_Gemm_Add_ReLU.py").read_text()
                      + "\nimport yaml  # noqa\nimport json\n")
    assert convert("kernelbench", source).packages == ["yaml"]
    missing = tmp_path / "2_Uses_missing.py"
    missing.write_text("import kjudge_not_a_package\n")
    refused = _failure(tmp_path, "kernelbench", missing)
    assert "kjudge_not_a_package" in refused.message and "pip install" in refused.fix
    path, _ = import_problem("kernelbench", FORMATS_DIR / "kernelbench/94_MSELoss.py", None,
                             tmp_path / "out")
    yaml_text = (path / "problem.yaml").read_text()
    (path / "problem.yaml").write_text(yaml_text + "packages: [yaml, kjudge_not_a_package]\n")
    outcomes = {o.path.name: o for o in package_outcomes(load_problem(path))}
    assert outcomes["<package yaml>"].status == "ok"
    assert outcomes["<package kjudge_not_a_package>"].status == "FAIL"


def test_the_validator_refuses_a_problem_that_zeros_pass(tmp_path, cpu):
    """KernelBench's own atol (1e-4) over a softmax of 393216 values (~4e-6 each): zeros and a
    constant pass; the importer tightens it, and the validator refuses it put back."""
    from judge.tooling.selftest import strength_outcomes

    path, _ = import_problem("kernelbench", FORMATS_DIR / "kernelbench/23_Softmax.py", None,
                             tmp_path)
    assert {o.status for o in strength_outcomes(load_problem(path), cpu)} == {"ok"}
    text = (path / "problem.yaml").read_text()
    assert "atol: 1.0e-08" in text
    (path / "problem.yaml").write_text(text.replace("atol: 1.0e-08", "atol: 0.0001"))
    weak = strength_outcomes(load_problem(path), cpu)
    assert [o.status for o in weak] == ["FAIL", "FAIL"], [o.detail for o in weak]
    assert "cannot tell all zeros from the reference" in weak[0].detail


def test_an_import_that_hangs_is_refused_with_every_process_it_started(tmp_path):
    import subprocess

    from judge.problem.importers import discover
    from judge.tooling.importing import ImportRequest, import_many

    corpus = tmp_path / "level"
    corpus.mkdir()
    marker = f"{os.getpid() % 1000 + 9000}.5"  # a sleep no other test starts
    (corpus / "1_Hangs.py").write_text(
        "import subprocess, time\n"
        f"subprocess.Popen(['sleep', '{marker}'])\n"
        "time.sleep(1000)\n")
    shutil.copy(FORMATS_DIR / "kernelbench" / "94_MSELoss.py", corpus)
    request = ImportRequest("kernelbench", tmp_path / "out", check=False)
    sources = discover("kernelbench", corpus)
    outcomes = {Path(o.source).name: o
                for o in import_many(request, sources, jobs=2, timeout_s=30)}
    assert outcomes["1_Hangs.py"].status == "refused"
    assert "took over 30 s" in outcomes["1_Hangs.py"].detail
    assert outcomes["94_MSELoss.py"].status == "imported"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["p_94_mseloss"]
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert left.stdout == "", "the hung import's own child outlived it"


def test_a_tuple_whose_dict_changes_keys_is_refused_before_the_next_test_is_drawn(tmp_path):
    """amd/moe's weights dict has a key per expert: drawing every test first took minutes."""
    folder = tmp_path / "moe_py"
    folder.mkdir()
    shutil.copy(FORMATS_DIR / "gpumode" / "utils.py", tmp_path)
    (folder / "task.yml").write_text(
        'files:\n  - {"name": "submission.py", "source": "@SUBMISSION@"}\n'
        '  - {"name": "utils.py", "source": "../utils.py"}\n'
        '  - {"name": "reference.py", "source": "reference.py"}\nlang: "py"\n'
        'tests:\n  - {"experts": 2, "seed": 1}\n  - {"experts": 3, "seed": 2}\n'
        '  - {"experts": 99, "seed": 3}\n')
    (folder / "reference.py").write_text(
        "import torch\n\n\n"
        "def ref_kernel(data):\n    x, weights = data\n"
        "    return sum(x @ w for w in weights.values())\n\n\n"
        "def generate_input(experts, seed):\n"
        "    if experts > 50:\n        raise RuntimeError('drew the large test')\n"
        "    gen = torch.Generator(device='cuda').manual_seed(seed)\n"
        "    x = torch.randn(4, 8, device='cuda', generator=gen)\n"
        "    return x, {f'expert{i}': torch.randn(8, 8, device='cuda', generator=gen)\n"
        "               for i in range(experts)}\n")
    with pytest.raises(ImportFailure) as refused:
        import_problem("gpumode", folder, None, tmp_path / "out")
    assert "element 1 (weights)" in str(refused.value)
    assert "a dict's keys change" in str(refused.value)


def test_a_reference_that_disagrees_with_itself_across_thread_counts_is_named(tmp_path):
    """KernelBench's EfficientNetB2 (BatchNorm over two values after pooling to 1 x 1) moves by
    ~1 between one thread and two: its own baseline is WA, and the refusal says why. Here a
    model whose sums change with the thread count by construction."""
    from judge.tooling.importing import _order_sensitivity

    for name, body, ill in (("1_Threads.py", "x * torch.get_num_threads()", True),
                            ("2_Steady.py", "x * 2.0", False)):
        (tmp_path / name).write_text(
            "import torch\n\n\nclass Model(torch.nn.Module):\n"
            f"    def forward(self, x):\n        return {body}\n\n\n"
            "def get_inputs():\n    return [torch.rand(4, 8)]\n\n\n"
            "def get_init_inputs():\n    return []\n")
        path, _ = import_problem("kernelbench", tmp_path / name, None, tmp_path / "out")
        problem = load_problem(path)
        why = _order_sensitivity(problem, Reference(problem, "cpu"), problem.tests_for("cpu")[0])
        assert ("disagrees with itself" in why and "ill-conditioned" in why) is ill, why
        assert bool(why) is ill


def test_an_imported_kernelbench_problem_reads_well_and_takes_cpp_on_the_cpu(tmp_path):
    from judge.problem.importers.kernelbench import readable_title

    problem, _ = imported(tmp_path, "kernelbench", "kernelbench/76_Gemm_Add_ReLU.py")
    assert problem.spec.title == "Gemm Add ReLU (KernelBench #76)"
    assert "cpp" in problem.spec.languages and (problem.path / "templates/cpp.cpp").is_file()
    assert readable_title(Path("KernelBench/level2/76_Gemm_Add_ReLU.py")) == \
        "Gemm Add ReLU (KernelBench level 2, #76)"
    assert readable_title(Path("matmul.py")) == "matmul (KernelBench)"


SLOW_ON_META = '''import time
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        with open(@LOG@, "a") as log:
            log.write(x.device.type + "\\n")
        if x.device.type == "meta":  # as an LSTM's per-step loop is there
            time.sleep(1.05)
        return torch.relu(x)


batch_size = 64
dim = 65536


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
'''


def test_a_model_slow_on_the_meta_device_is_probed_on_the_cpu_to_the_same_folder(
        tmp_path, monkeypatch):
    """KernelBench's shape probes run on the meta device (nothing computed, whatever the file's
    sizes); a model that is slow there (an LSTM: 7 s a probe, 0.2 s computed) has its smaller
    sizes probed on the CPU, and the draft is the one the meta device alone gives."""
    from judge.problem.importers import convert, kernelbench

    log = tmp_path / "devices"
    source = tmp_path / "1_Slow_On_Meta.py"
    source.write_text(SLOW_ON_META.replace("@LOG@", repr(str(log))))
    fast = convert("kernelbench", source)
    devices = log.read_text().split()
    assert devices[0] == "meta" and devices.count("meta") == 1 and len(devices) > 3, devices
    log.unlink()
    monkeypatch.setattr(kernelbench, "META_SLOW_S", float("inf"))
    alone = convert("kernelbench", source)
    assert log.read_text().split().count("cpu") < devices.count("cpu")  # meta did the probes
    assert (fast.signature, fast.tests) == (alone.signature, alone.tests)


def test_torchs_first_use_of_the_meta_device_does_not_make_a_model_slow_there(tmp_path,
                                                                               monkeypatch):
    """A fresh interpreter's first meta run pays torch's loading of its Python meta kernels
    (~1.4 s, over META_SLOW_S): a model that takes milliseconds there was judged slow on it and
    probed on the CPU, an import 2-3x as long. A fresh interpreter's probes go where a warm one's
    do."""
    import subprocess
    import sys

    from judge.problem.importers import convert, kernelbench

    log = tmp_path / "devices"
    source = tmp_path / "1_Fast_On_Meta.py"
    source.write_text(SLOW_ON_META.replace("@LOG@", repr(str(log)))
                      .replace("time.sleep(1.05)", "pass"))
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from "
                    "judge.problem.importers import convert; convert('kernelbench', "
                    "Path(sys.argv[1]))", source], cwd=ROOT, check=True, timeout=300)
    fresh = log.read_text().split()
    log.unlink()
    monkeypatch.setattr(kernelbench, "META_SLOW_S", float("inf"))
    convert("kernelbench", source)
    assert fresh == log.read_text().split() and fresh.count("meta") > 3, fresh


SHAPE_ERROR = SLOW_ON_META.replace(
    """        if x.device.type == "meta":  # as an LSTM's per-step loop is there
            time.sleep(1.05)
        return torch.relu(x)""",
    """        y = torch.relu(x)  # work a CPU run would compute before failing
        return y @ y  # (batch, dim) @ (batch, dim): no size makes it fit""")


def test_a_model_that_fails_on_meta_for_its_shapes_is_not_computed_on_the_cpu(tmp_path):
    """A shape error on the meta device is one on the CPU too, found there only after computing
    what comes before it for real (a ConvTranspose3d whose LayerNorm does not fit: 7 s): the
    import says what failed without the CPU run. A failure for want of data (Tensor.item())
    is still tried on the CPU, and imports."""
    from judge.problem.importers import convert

    log = tmp_path / "devices"
    source = tmp_path / "1_Shapes_Do_Not_Fit.py"
    source.write_text(SHAPE_ERROR.replace("@LOG@", repr(str(log))))
    with pytest.raises(ImportFailure, match="does not run with"):
        convert("kernelbench", source)
    assert log.read_text().split() == ["meta"]
    log.unlink()
    source.write_text(SHAPE_ERROR.replace("@LOG@", repr(str(log)))
                      .replace("return y @ y", "return y / y.abs().max().item()")
                      .replace("dim = 65536", "dim = 256"))
    draft = convert("kernelbench", source)
    assert log.read_text().split()[:2] == ["meta", "cpu"] and draft.tests
