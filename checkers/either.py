"""`either`: an element matches when it is within `atol` OR within `rtol` of the reference,
|out - ref| <= max(atol, rtol * |ref|): FlashInfer-Bench's rule (an element fails only when it
is outside both). `allclose` allows the sum, atol + rtol * |ref|, up to twice as much.

NaN, Inf and the matched ratio as in `allclose`.
"""

from __future__ import annotations

import torch

from checkers.allclose import compare
from checkers.report import CheckReport


def check(out: torch.Tensor, ref: torch.Tensor, *, rtol: float, atol: float,
          matched_ratio: float) -> CheckReport:
    return compare(out, ref, lambda exp: torch.clamp_min(rtol * exp.abs(), atol), rtol=rtol,
                   atol=atol, matched_ratio=matched_ratio)
