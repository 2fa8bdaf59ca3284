import math

import pytest
import torch

from checkers import get_checker, merge

allclose = get_checker("allclose")
exact = get_checker("exact")
TOL = dict(rtol=1e-3, atol=1e-5, matched_ratio=0.99)


def test_identical_outputs_pass():
    ref = torch.randn(100)
    r = allclose(ref.clone(), ref, **TOL)
    assert r.passed and r.matched_ratio == 1.0 and r.mismatches == 0 and r.max_abs_err == 0


def test_tolerance_is_atol_plus_rtol_times_reference():
    ref = torch.tensor([1.0, 100.0], dtype=torch.float64)
    inside = ref + torch.tensor([1e-5 + 1e-3 * 1.0, 1e-5 + 1e-3 * 100.0], dtype=torch.float64)
    assert allclose(inside, ref, rtol=1e-3, atol=1e-5, matched_ratio=1.0).passed
    outside = ref + torch.tensor([2e-3, 0.2], dtype=torch.float64)
    r = allclose(outside, ref, rtol=1e-3, atol=1e-5, matched_ratio=0.5)
    assert not r.passed and r.mismatches == 2


def test_nan_and_inf_never_match_finite_reference():
    ref = torch.zeros(4)
    out = torch.tensor([0.0, float("nan"), float("inf"), -float("inf")])
    r = allclose(out, ref, rtol=1.0, atol=1e9, matched_ratio=0.25)
    assert r.matched_ratio == 0.25 and r.passed
    assert r.nan_count == 1 and r.inf_count == 2
    assert r.worst[0].index in ([1], [2], [3])


def test_nonfinite_reference_matched_only_by_the_same_value():
    ref = torch.tensor([float("nan"), float("inf"), -float("inf")])
    assert allclose(ref.clone(), ref, rtol=0, atol=0, matched_ratio=1.0).passed
    r = allclose(torch.tensor([0.0, float("-inf"), 1.0]), ref, rtol=0, atol=0, matched_ratio=0.1)
    assert r.matched_ratio == 0


def test_negative_zero_equals_zero():
    assert allclose(torch.tensor([-0.0]), torch.tensor([0.0]), rtol=0, atol=0,
                    matched_ratio=1.0).passed
    assert exact(torch.tensor([-0.0]), torch.tensor([0.0])).passed


def test_matched_ratio_exactly_at_threshold_passes():
    ref = torch.zeros(100)
    out = ref.clone()
    out[0] = 1.0
    assert allclose(out, ref, rtol=0, atol=0, matched_ratio=0.99).passed
    out[1] = 1.0
    r = allclose(out, ref, rtol=0, atol=0, matched_ratio=0.99)
    assert not r.passed and math.isclose(r.matched_ratio, 0.98)


@pytest.mark.parametrize("out,message", [
    (torch.zeros(3, 2), "shape"),
    (torch.zeros(6, dtype=torch.float64), "dtype"),
    (None, "not a tensor"),
])
def test_shape_dtype_and_missing_outputs_fail_with_a_message(out, message):
    r = allclose(out, torch.zeros(6), **TOL)
    assert not r.passed and message in r.message


def test_worst_mismatches_are_the_largest_errors_with_indices():
    ref = torch.zeros(3, 4)
    out = ref.clone()
    out[2, 1], out[0, 3] = 5.0, 9.0
    r = allclose(out, ref, rtol=0, atol=0, matched_ratio=0.5)
    assert [w.index for w in r.worst] == [[0, 3], [2, 1]]
    assert r.worst[0].got == 9.0 and r.worst[0].expected == 0.0
    assert r.max_abs_err == 9.0


def test_exact_for_integers():
    ref = torch.arange(10, dtype=torch.int32)
    assert exact(ref.clone(), ref).passed
    bad = ref.clone()
    bad[3] = -1
    r = exact(bad, ref)
    assert not r.passed and r.mismatches == 1 and r.worst[0].index == [3]


def test_merge_of_several_outputs_counts_all_elements():
    a = allclose(torch.zeros(10), torch.zeros(10), **TOL)
    b = allclose(torch.ones(10), torch.zeros(10), rtol=0, atol=0, matched_ratio=0.0)
    merged = merge({"a": a, "b": b}, 0.99)
    assert merged.total == 20 and merged.mismatches == 10 and not merged.passed
    assert merged.matched_ratio == 0.5


def test_reports_with_nan_serialize_as_standard_json():
    import json

    from judge.judging.record import TestReport, json_safe
    from judge.verdicts import Verdict

    r = allclose(torch.tensor([float("nan"), 1.0]), torch.zeros(2), rtol=0, atol=0,
                 matched_ratio=1.0)
    report = TestReport("t", True, Verdict.WA, worst=[vars(w) for w in r.worst],
                        max_rel_err=float("inf"))
    text = json.dumps(report.to_dict(), allow_nan=False)
    assert '"got": "NaN"' in text and '"max_rel_err": "Infinity"' in text
    assert json_safe([-float("inf")]) == ["-Infinity"]


def test_the_identical_output_shortcut_reports_what_the_full_comparison_does():
    """An output equal to the reference skips the float64 pass; its report is the same as the
    full comparison's (here forced by one element off and back within tolerance)."""
    ref = torch.tensor([1.0, -0.0, float("inf"), float("-inf"), 3.5])
    quick = allclose(ref.clone(), ref, rtol=1e-5, atol=1e-6, matched_ratio=0.99)
    near = ref.clone()
    near[0] = 1.0 + 1e-7  # within tolerance: the same verdict, by the full path
    full = allclose(near, ref, rtol=1e-5, atol=1e-6, matched_ratio=0.99)
    for key in ("passed", "matched_ratio", "mismatches", "total", "nan_count", "inf_count",
                "worst", "message"):
        assert getattr(quick, key) == getattr(full, key), key
    assert quick.max_abs_err == quick.max_rel_err == 0.0
    with_nan = torch.tensor([float("nan"), 1.0])  # NaN equals nothing: the full path matches it
    assert allclose(with_nan.clone(), with_nan, rtol=0, atol=0, matched_ratio=1.0).passed


def test_a_whole_call_checker_gets_every_tensor_on_the_reference_s_device():
    """On a GPU the reference's inputs and outputs are on the device and the run's outputs are
    read back on the host: a check_call checker gets them on one device (here the meta device
    stands in for the GPU)."""
    import torch

    from checkers import CheckReport, check_outputs

    seen = {}

    def check_call(got, expected, inputs, **_):
        seen.update({name: value.device.type for name, value in
                     (*got.items(), *expected.items(), *inputs.items())
                     if isinstance(value, torch.Tensor)})
        return CheckReport(passed=True, message="ok", matched_ratio=1.0, total=1)

    on_device = torch.empty(4, device="meta")
    check_outputs(check_call, {"y": torch.zeros(4)}, {"y_ref": on_device}, {"x": on_device, "n": 4},
                  rtol=0, atol=0, matched_ratio=0.99)
    assert seen == {"y": "meta", "y_ref": "meta", "x": "meta"}
