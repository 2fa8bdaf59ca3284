"""`kjudge problem import`: FlashInfer-Bench, GPU MODE and KernelBench problems become folders
that validate, with the baseline AC, inputs from the judge's seed and what does not map refused
by name. The inputs are small example files in each format (tests/formats), no downloads."""

import json
import shutil

import pytest
import torch

from checkers import get_checker
from judge.judging.pipeline import JudgeOptions, judge_source
from judge.judging.reference import Reference
from judge.problem.importers import FORMATS, import_problem
from judge.problem.importers.draft import ImportFailure
from judge.problem.schema import ProblemError, load_problem
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
    assert spec.checker == "either" and spec.tolerance.matched_ratio == 1.0
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
    assert histogram.spec.checker == "exact"


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
    assert "the reference runs on the CPU test point cpu" in done.stdout
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
def test_inputs_drawn_on_several_threads_at_once_are_the_seeds_own(tmp_path, fmt, source):
    """The formats draw from the process's global RNG, and the judge draws a timed round's sets
    on every CPU at once: unguarded, a set came out of another's seed (an imported MSELoss's
    own baseline was SE, 'wrong on timed round 2')."""
    problem, _ = imported(tmp_path, fmt, source)
    test = problem.tests_for("cpu")[0]
    assert not Reference(problem, "cpu").draws_differ_in_parallel(test, range(16))
