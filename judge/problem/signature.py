"""The run_kernel signature, declared once in problem.yaml, rendered for every language (each
language's `declaration` picks the form: judge/languages)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from judge.harness.protocol import DTYPES

if TYPE_CHECKING:
    from judge.problem.schema import Arg


def c_type(arg: Arg, c_types: Mapping[str, str] | None = None) -> str:
    """The C parameter type: scalars by value, inputs as const pointers, outputs as pointers;
    `c_types` spells a dialect's own types (CUDA's __half, __nv_fp8_e4m3)."""
    if arg.role == "scalar":
        return DTYPES[arg.dtype].c_scalar
    base = (c_types or {}).get(arg.dtype) or DTYPES[arg.dtype].c
    return f"const {base}*" if arg.role == "input" else f"{base}*"


def c_declaration(args: Sequence[Arg], c_types: Mapping[str, str] | None = None) -> str:
    params = ", ".join(f"{c_type(a, c_types)} {a.name}" for a in args)
    return f'extern "C" void run_kernel({params})'


def python_declaration(args: Sequence[Arg]) -> str:
    return f"def run_kernel({', '.join(a.name for a in args)}):"


def describe(args: Sequence[Arg]) -> list[str]:
    """One line per argument, for statements and the CLI."""
    lines = []
    for a in args:
        shape = f" [{', '.join(str(s) for s in a.shape)}]" if a.shape else ""
        lines.append(f"{a.name}: {a.role} {a.dtype}{shape}")
    return lines
