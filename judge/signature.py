"""The run_kernel signature: its arguments as problem.yaml declares them (`Arg`, in call order;
dtypes from the harness protocol), and their rendering for every language (each language's
`declaration` picks the form: judge/languages). The vocabulary both the problem format
(judge/problem/schema.py) and the languages use, below both."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge.harness.protocol import DTYPES, SCALAR_DTYPES, TENSOR_DTYPES

Identifier = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class Strict(BaseModel):
    """A part of problem.yaml: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Scale(Strict):
    """A block-scaled tensor's scales: the tensor `by` holds one scale per block of `block`
    values (one size per dimension, in values: a packed fp4 byte holds two); the number a value
    stands for is value x its block's scale. A scaled output is checked through that product."""

    by: Identifier
    block: list[Annotated[int, Field(ge=1)]] = Field(min_length=1)


class Arg(Strict):
    """One argument of run_kernel, in call order."""

    name: Identifier
    role: Literal["input", "output", "scalar"]
    dtype: str
    shape: list[int | str] | None = None
    value: int | float | str | None = None  # scalars: expression over params (default: same name)
    scale: Scale | None = None

    @model_validator(mode="after")
    def _check(self) -> Arg:
        if self.role == "scalar":
            if self.dtype not in SCALAR_DTYPES:
                raise ValueError(f"scalar dtype must be one of {', '.join(SCALAR_DTYPES)}")
            if self.shape is not None:
                raise ValueError("a scalar has no shape: remove `shape`")
        else:
            if self.dtype not in TENSOR_DTYPES:
                raise ValueError(f"tensor dtype must be one of {', '.join(TENSOR_DTYPES)}")
            if self.shape is None:
                raise ValueError("a tensor needs `shape`, a list of sizes or expressions")
            if self.value is not None:
                raise ValueError("only scalars take `value`")
            if self.scale and len(self.scale.block) != len(self.shape):
                raise ValueError(f"`scale.block` needs one size per dimension of `shape` "
                                 f"({len(self.shape)})")
        if self.role == "scalar" and self.scale:
            raise ValueError("a scalar has no `scale`")
        return self


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
