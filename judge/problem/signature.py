"""The run_kernel signature, declared once in problem.yaml, rendered for every language."""

from __future__ import annotations

from collections.abc import Sequence

from judge.problem.schema import Arg

_C_TENSOR = {
    "float32": "float", "float64": "double", "int8": "int8_t", "uint8": "uint8_t",
    "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "bool": "bool",
}
_C_HALF = {
    "cuda": {"float16": "__half", "bfloat16": "__nv_bfloat16"},
    "maca": {"float16": "__half", "bfloat16": "__maca_bfloat16"},
    "cpp": {"float16": "_Float16", "bfloat16": "uint16_t"},
}
_C_SCALAR = {"int32": "int", "int64": "int64_t", "float32": "float", "float64": "double"}


def c_type(arg: Arg, language: str) -> str:
    if arg.role == "scalar":
        return _C_SCALAR[arg.dtype]
    base = _C_HALF.get(language, _C_HALF["cpp"]).get(arg.dtype) or _C_TENSOR[arg.dtype]
    return f"const {base}*" if arg.role == "input" else f"{base}*"


def c_declaration(args: Sequence[Arg], language: str = "cpp") -> str:
    params = ", ".join(f"{c_type(a, language)} {a.name}" for a in args)
    return f'extern "C" void run_kernel({params})'


def python_declaration(args: Sequence[Arg]) -> str:
    return f"def run_kernel({', '.join(a.name for a in args)}):"


def declaration(args: Sequence[Arg], language: str) -> str:
    if language in ("cpp", "cuda", "maca"):
        return c_declaration(args, language)
    return python_declaration(args)


def describe(args: Sequence[Arg]) -> list[str]:
    """One line per argument, for statements and the CLI."""
    lines = []
    for a in args:
        shape = f" [{', '.join(str(s) for s in a.shape)}]" if a.shape else ""
        lines.append(f"{a.name}: {a.role} {a.dtype}{shape}")
    return lines
