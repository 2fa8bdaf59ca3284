"""`exact`: every element equal (integer and boolean outputs); matched_ratio still reported."""

from __future__ import annotations

import torch

from checkers.allclose import structure_mismatch, worst_mismatches
from checkers.report import CheckReport


def check(out: torch.Tensor, ref: torch.Tensor, *, rtol: float = 0.0, atol: float = 0.0,
          matched_ratio: float = 1.0) -> CheckReport:
    bad = structure_mismatch(out, ref)
    if bad:
        return bad
    total = ref.numel()
    if total == 0:
        return CheckReport(True, matched_ratio=1.0, message="empty output")
    got = out.detach().cpu().reshape(-1)
    exp = ref.detach().cpu().reshape(-1)
    if got.dtype.is_floating_point:
        matched = (got == exp) | (torch.isnan(got) & torch.isnan(exp))
    else:
        matched = got == exp
    n_matched = int(matched.sum())
    diff = (got.to(torch.float64) - exp.to(torch.float64)).abs()
    finite = torch.isfinite(diff)
    return CheckReport(
        passed=n_matched == total,
        matched_ratio=n_matched / total,
        max_abs_err=float(diff[finite].max()) if finite.any() else 0.0,
        max_rel_err=0.0 if n_matched == total else float("inf"),
        mismatches=total - n_matched,
        total=total,
        nan_count=int(torch.isnan(got).sum()) if got.dtype.is_floating_point else 0,
        inf_count=int(torch.isinf(got).sum()) if got.dtype.is_floating_point else 0,
        worst=worst_mismatches(got.to(torch.float64), exp.to(torch.float64), diff, matched,
                               tuple(ref.shape)),
        message=f"{n_matched}/{total} elements equal",
    )
