"""`allclose`: element-wise |out - ref| <= atol + rtol * |ref|; pass iff matched_ratio >= threshold.

NaN or Inf in the output never matches a finite reference; a non-finite reference is matched
only by the same value (NaN by NaN, +Inf by +Inf). -0.0 equals 0.0.
"""

from __future__ import annotations

import torch

from checkers.report import CheckReport, Mismatch

WORST = 5


def structure_mismatch(out: torch.Tensor, ref: torch.Tensor) -> CheckReport | None:
    if not isinstance(out, torch.Tensor):
        return CheckReport(False, message=f"output is {type(out).__name__}, not a tensor")
    if tuple(out.shape) != tuple(ref.shape):
        return CheckReport(False, total=ref.numel(),
                           message=f"shape {tuple(out.shape)} != expected {tuple(ref.shape)}")
    if out.dtype != ref.dtype:
        return CheckReport(False, total=ref.numel(),
                           message=f"dtype {out.dtype} != expected {ref.dtype}")
    return None


def check(out: torch.Tensor, ref: torch.Tensor, *, rtol: float, atol: float,
          matched_ratio: float) -> CheckReport:
    return compare(out, ref, lambda exp: atol + rtol * exp.abs(), rtol=rtol, atol=atol,
                   matched_ratio=matched_ratio)


def compare(out: torch.Tensor, ref: torch.Tensor, bound, *, rtol: float, atol: float,
            matched_ratio: float) -> CheckReport:
    """The element-wise check with `bound(expected)`, the absolute error each finite element
    may have (float64 tensors), and the NaN/Inf rules above."""
    bad = structure_mismatch(out, ref)
    if bad:
        return bad
    total = ref.numel()
    if total == 0:
        return CheckReport(True, matched_ratio=1.0, message="empty output")
    if torch.equal(out, ref):  # every element the same, none NaN (NaN equals nothing)
        return _identical(ref, rtol, atol, matched_ratio)
    got = out.detach().to("cpu", torch.float64).reshape(-1)
    exp = ref.detach().to("cpu", torch.float64).reshape(-1)
    abs_err = (got - exp).abs()
    rel_err = abs_err / exp.abs().clamp_min(torch.finfo(torch.float64).tiny)
    finite_ref = torch.isfinite(exp)
    matched = torch.where(
        finite_ref,
        torch.isfinite(got) & (abs_err <= bound(exp)),
        (got == exp) | (torch.isnan(got) & torch.isnan(exp)),
    )
    n_matched = int(matched.sum())
    ratio = n_matched / total
    # error figures over finite pairs only; non-finite outputs are counted separately
    both_finite = finite_ref & torch.isfinite(got)
    max_abs = float(abs_err[both_finite].max()) if both_finite.any() else 0.0
    max_rel = float(rel_err[both_finite].max()) if both_finite.any() else 0.0
    report = CheckReport(
        passed=ratio >= matched_ratio,
        matched_ratio=ratio,
        max_abs_err=max_abs,
        max_rel_err=max_rel,
        mismatches=total - n_matched,
        total=total,
        nan_count=int(torch.isnan(got).sum()),
        inf_count=int(torch.isinf(got).sum()),
        worst=worst_mismatches(got, exp, abs_err, matched, tuple(ref.shape)),
    )
    report.message = (
        f"{n_matched}/{total} elements within rtol={rtol:g}, atol={atol:g} "
        f"(matched_ratio {ratio:.6f} {'>=' if report.passed else '<'} {matched_ratio:g})"
    )
    return report


def _identical(ref: torch.Tensor, rtol: float, atol: float, matched_ratio: float) -> CheckReport:
    """The report of an output equal to the reference element for element (the common case of
    an exact kernel), without the float64 pass: every element matches, with no error."""
    total = ref.numel()
    inf_count = int(torch.isinf(ref).sum()) if ref.dtype.is_floating_point else 0
    return CheckReport(
        passed=True, matched_ratio=1.0, max_abs_err=0.0, max_rel_err=0.0, mismatches=0,
        total=total, nan_count=0, inf_count=inf_count, worst=[],
        message=f"{total}/{total} elements within rtol={rtol:g}, atol={atol:g} "
                f"(matched_ratio 1.000000 >= {matched_ratio:g})")


def worst_mismatches(got, exp, abs_err, matched, shape) -> list[Mismatch]:
    bad = (~matched).nonzero().reshape(-1)
    if bad.numel() == 0:
        return []
    # non-finite outputs rank first, then by absolute error
    score = torch.nan_to_num(abs_err[bad], nan=float("inf"), posinf=float("inf"))
    order = torch.argsort(score, descending=True, stable=True)[:WORST]
    return [
        Mismatch(unravel(int(bad[i]), shape), float(got[bad[i]]), float(exp[bad[i]]))
        for i in order
    ]


def unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return list(reversed(index))
