"""fp8 and packed fp4 (with block scales) in signatures, the harness, the checker and the C ABI."""

import pytest
import torch
import yaml

from checkers import get_checker
from judge.harness.main import InputSet, poison
from judge.judging import dequant
from judge.judging.pipeline import JudgeOptions, judge_source
from judge.languages import get_language
from judge.problem.schema import ProblemError, load_problem
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS, ROOT

NVFP4 = ROOT / "tests" / "problems" / "nvfp4_quant"


def fp4(*codes: int) -> torch.Tensor:
    """Packed fp4 of the given 4-bit codes, two per byte, the first in the low nibble."""
    pairs = [codes[i] | (codes[i + 1] << 4) for i in range(0, len(codes), 2)]
    return torch.tensor(pairs, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)


def test_fp4_values_unpack_low_nibble_first_with_signs():
    assert dequant.values(fp4(1, 2, 7, 15, 8, 0)).tolist() == [0.5, 1.0, 6.0, -6.0, -0.0, 0.0]
    assert dequant.values(fp4(3, 4).reshape(1, 1)).shape == (1, 2)  # the last dimension doubles


def test_fp8_values_are_exact_and_keep_nan():
    x = torch.tensor([448.0, -0.001953125, float("nan")])
    assert dequant.values(x.to(torch.float8_e4m3fn)).tolist()[:2] == [448.0, -0.001953125]
    assert dequant.values(x.to(torch.float8_e5m2)).isnan().tolist() == [False, False, True]


def test_block_scales_multiply_their_blocks_and_a_partial_edge_block():
    elements = torch.ones(2, 5)
    scale = torch.tensor([[2.0, 3.0], [5.0, 7.0]])
    assert dequant.dequantize(elements, scale, [1, 4]).tolist() == [[2, 2, 2, 2, 3],
                                                                     [5, 5, 5, 5, 7]]
    with pytest.raises(ValueError, match="need \\[2, 2\\]"):
        dequant.dequantize(elements, torch.ones(2, 1), [1, 4])


def test_a_scaled_output_is_compared_through_its_product_the_scale_left_out():
    problem = load_problem(NVFP4)
    q = fp4(*([2] * 16))  # sixteen 1.0s
    outputs = {"q": q.reshape(1, 8), "q_scale": torch.tensor([[4.0]]).to(torch.float8_e4m3fn)}
    compared = dequant.comparable(outputs, problem.spec.signature)
    assert list(compared) == ["q"] and compared["q"].tolist() == [[4.0] * 16]
    # the same numbers split otherwise between elements and scale compare equal
    other = {"q": fp4(*([4] * 16)).reshape(1, 8),  # 2.0s
             "q_scale": torch.tensor([[2.0]]).to(torch.float8_e4m3fn)}
    assert torch.equal(dequant.comparable(other, problem.spec.signature)["q"], compared["q"])


def test_the_checker_counts_nan_in_an_fp8_output_after_dequantisation():
    check = get_checker("allclose")
    ref = torch.ones(100)
    got = ref.clone()
    got[:3] = float("nan")
    report = check(dequant.values(got.to(torch.float8_e4m3fn)),
                   dequant.values(ref.to(torch.float8_e4m3fn)),
                   rtol=1e-2, atol=1e-2, matched_ratio=0.99)
    assert not report.passed and report.nan_count == 3 and report.mismatches == 3


def test_poison_is_nan_for_fp8_and_random_bytes_for_fp4():
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu):
        t = torch.zeros(64, dtype=dtype)
        poison(t)
        assert t.float().isnan().all()
    first, second = torch.zeros(4096, dtype=torch.float4_e2m1fn_x2), torch.zeros(
        4096, dtype=torch.float4_e2m1fn_x2)
    poison(first)
    poison(second)
    a, b = first.view(torch.uint8), second.view(torch.uint8)
    # fp4 has no NaN: every byte is a value, so the poison differs call to call
    assert not torch.equal(a, b) and len(torch.unique(a)) > 200


def test_a_gpus_fp4_outputs_are_poisoned_with_the_judges_own_bytes():
    """On a GPU the harness poisons the device's outputs before a turn. fp4's poison is random
    bytes: the harness's own differed from those the judge wrote in the shared file, so that a
    call that left its fp4 outputs unwritten did not look skipped to the judge (which compares
    a sample with its file's poison). The harness now copies the judge's bytes (float outputs:
    NaN either way). Device tensors are stood in for by host ones."""
    from types import SimpleNamespace

    from judge.harness.main import Harness, Kernel

    judged = torch.zeros(512, dtype=torch.float4_e2m1fn_x2)
    poison(judged)  # in the judge's file
    fresh = SimpleNamespace(staged=True, stage_in=lambda: None, values=[],
                            outputs={"q": torch.zeros(512, dtype=torch.float4_e2m1fn_x2),
                                     "y": torch.zeros(8)},
                            host_outputs={"q": judged, "y": torch.zeros(8)})
    harness = object.__new__(Harness)
    harness.fresh, harness.fresh_bound, harness.release = [fresh], {}, None
    harness.kernel, harness.recorder = Kernel(lambda: None), None
    harness.device = SimpleNamespace(flush_cache=lambda: None, synchronize=lambda: None)
    harness.op_prepare({"fresh": True, "calls": 1})
    assert torch.equal(fresh.outputs["q"].view(torch.uint8), judged.view(torch.uint8))
    assert fresh.outputs["y"].isnan().all()


def test_an_input_changed_in_any_bit_is_modified(tmp_path):
    args = [{"name": "a", "role": "input"}, {"name": "s", "role": "input"},
            {"name": "z", "role": "input"}, {"name": "c", "role": "output"}]
    data = {"a": torch.randn(32).to(torch.float8_e4m3fn), "s": fp4(1, 2, 3, 4),
            "z": torch.zeros(4)}
    torch.save(data, tmp_path / "set.pt")
    inputs = InputSet(str(tmp_path / "set.pt"), args, {"c": {"shape": [1], "dtype": "float32"}},
                      torch.device("cpu"))
    assert inputs.modified_inputs() == []
    inputs.inputs["a"].view(torch.uint8)[5] ^= 1
    inputs.inputs["s"].view(torch.uint8)[0] ^= 0x10
    inputs.inputs["z"][2] = -0.0  # equal as a number, not as bits
    assert inputs.modified_inputs() == ["a", "s", "z"]


def test_c_abi_spells_fp8_for_cuda_and_bytes_for_fp4_and_cpp():
    gemm = load_problem(PROBLEMS / "fp8_gemm")
    cuda = get_language("cuda").declaration(gemm.spec.signature)
    assert "const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b" in cuda
    assert "__nv_bfloat16* c" in cuda
    quant = get_language("cpp").declaration(load_problem(NVFP4).spec.signature)
    assert quant == ('extern "C" void run_kernel(const float* x, uint8_t* q, uint8_t* q_scale, '
                     'int m, int k)')


def _edit(tmp_path, change) -> list[str]:
    folder = tmp_path / "nvfp4"
    import shutil

    shutil.copytree(NVFP4, folder)
    spec = yaml.safe_load((folder / "problem.yaml").read_text())
    change({a["name"]: a for a in spec["signature"]})
    (folder / "problem.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(ProblemError) as info:
        load_problem(folder)
    return [str(i) for i in info.value.issues]


def test_scale_declarations_are_validated_with_file_field_and_fix(tmp_path):
    [unknown] = _edit(tmp_path / "1", lambda args: args["q"]["scale"].update(by="x"))
    assert unknown.startswith("problem.yaml: signature.q.scale.by: 'x' is not another output")
    [shape, shape2] = _edit(tmp_path / "2", lambda args: args["q"]["scale"].update(block=[1, 32]))
    assert shape.startswith("problem.yaml: signature.q_scale.shape: test point 'tiny': [4, 2], "
                            "but blocks of [1, 32] over q's [4, 32] values need [4, 1]")
    [dims] = _edit(tmp_path / "3", lambda args: args["q"]["scale"].update(block=[16]))
    assert "signature[1]" in dims and "one size per dimension" in dims


@pytest.mark.parametrize("file,verdict", [
    ("solutions/AC/exact.cpp", Verdict.AC),
    ("solutions/AC/torch_quant.py", Verdict.AC),
    ("solutions/WA/first_scale_only.cpp", Verdict.WA),
    ("solutions/WA/half_the_rows.cpp", Verdict.WA),
])
def test_packed_fp4_outputs_are_judged_through_their_scales(cpu, default_sandbox, file, verdict):
    result = judge_source(load_problem(NVFP4), (NVFP4 / file).read_text(), device=cpu,
                          sandbox=default_sandbox, options=JudgeOptions(timing=False),
                          filename=file)
    assert result.verdict is verdict, result.message
    if verdict is Verdict.WA:
        assert result.tests[0].mismatches > result.tests[0].total // 4


def test_an_fp8_kernel_that_skips_a_block_scale_is_wrong(cpu, default_sandbox):
    gemm = load_problem(PROBLEMS / "fp8_gemm")
    file = "solutions/WA/first_scale_only.py"
    result = judge_source(gemm, (gemm.path / file).read_text(), device=cpu,
                          sandbox=default_sandbox, options=JudgeOptions(timing=False),
                          filename=file)
    assert result.verdict is Verdict.WA and result.tests[0].max_abs_err > 0.05
