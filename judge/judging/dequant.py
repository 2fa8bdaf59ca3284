"""Quantized outputs compared as the numbers they stand for (trusted, the judge's process).

An fp8 or fp4 output is compared in float32 after dequantisation: its elements' values, and
where problem.yaml gives the output a `scale` (another output holding one scale per block of
elements, as NVFP4's and MX's block scales are), the element times its block's scale. The scale
output is then judged through that product only: two quantisations that differ in how they split
a value between element and scale but stand for the same numbers are both right. The checker's
rules for NaN and Inf then apply to those float32 values (fp4 has neither; e4m3fn has no Inf).
"""

from __future__ import annotations

import torch

from judge.harness.protocol import DTYPES
from judge.signature import Arg

# the 16 codes of fp4 e2m1 (OCP MX v1.0): sign, two exponent bits, one mantissa bit
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
               -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def is_low_precision(dtype: str) -> bool:
    """fp8 and fp4: floats of one byte or less, compared after dequantisation."""
    torch_dtype = getattr(torch, dtype)
    return torch_dtype.is_floating_point and torch_dtype.itemsize == 1


def values(t: torch.Tensor) -> torch.Tensor:
    """The float32 values of a low-precision tensor; packed fp4 is unpacked (two values per
    byte, the first in the low nibble: the last dimension doubles)."""
    name = str(t.dtype).removeprefix("torch.")
    packs = DTYPES[name].packs
    if packs == 1:
        return t.to(torch.float32)
    raw = t.contiguous().view(torch.uint8)
    codes = torch.stack([raw & 0x0F, raw >> 4], dim=-1).reshape(*t.shape[:-1], t.shape[-1] * packs)
    return torch.tensor(E2M1_VALUES, dtype=torch.float32)[codes.long()]


def dequantize(elements: torch.Tensor, scale: torch.Tensor, block: list[int]) -> torch.Tensor:
    """`elements` (float32 values) times the scale of the block each lies in; a block at the
    edge may be partial. A scale tensor of the wrong shape is ValueError (the problem's fault:
    the reference's outputs are dequantized the same way)."""
    if len(block) != elements.dim():
        raise ValueError(f"a block of {len(block)} sizes for a tensor of {elements.dim()} dims")
    wanted = [-(-size // b) for size, b in zip(elements.shape, block)]
    if list(scale.shape) != wanted:
        raise ValueError(f"scale of shape {list(scale.shape)}; blocks of {block} over "
                         f"{list(elements.shape)} need {wanted}")
    expanded = scale
    for dim, b in enumerate(block):
        expanded = expanded.repeat_interleave(b, dim=dim)
    crop = tuple(slice(0, size) for size in elements.shape)
    return elements * expanded[crop]


def comparable(outputs: dict[str, torch.Tensor], signature: list[Arg]) -> dict[str, torch.Tensor]:
    """The outputs as the checker compares them: low-precision ones as float32 values, scaled
    ones times their scales, scale outputs left out (they count through the product)."""
    args = {a.name: a for a in signature if a.role == "output" and a.name in outputs}
    scales = {a.scale.by for a in args.values() if a.scale}
    out = {}
    for name, arg in args.items():
        t = outputs[name]
        if name in scales:
            continue
        if arg.scale:
            scale = outputs[arg.scale.by]
            scale = values(scale) if is_low_precision(arg_dtype(scale)) else scale.float()
            out[name] = dequantize(_as_float(t), scale, arg.scale.block)
        elif is_low_precision(arg.dtype):
            out[name] = values(t)
        else:
            out[name] = t
    return out


def arg_dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def _as_float(t: torch.Tensor) -> torch.Tensor:
    return values(t) if is_low_precision(arg_dtype(t)) else t.float()
