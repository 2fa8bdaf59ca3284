"""What every importer produces (a `Draft`) and how it becomes a problem folder.

An importer reads a format's files and fills a Draft: the signature, the test points, the
tolerance with the rule it maps, the reference (make_inputs + reference over the format's own
code) and the baseline (the format's PyTorch code behind run_kernel). `write` turns it into a
folder `kjudge problem validate` checks: starter templates rendered from the signature, the
baseline as the AC self-test, the format's files kept under `source/` for the record. What the
format leaves open is a `KJUDGE-TODO` line the validator refuses until the organizer fills it.
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from judge.harness.protocol import DTYPES, SCALAR_DTYPES
from judge.languages import LANGUAGES as REGISTRY
from judge.languages import get_language
from judge.problem.schema import TODO_MARKER
from judge.signature import Arg

# an imported problem's languages: CUDA, every language with a starter (the Python kernel
# languages), and torch, the baseline's own; C++ too where it has a CPU point to run on
LANGUAGES = ("cuda", *sorted(n for n, x in REGISTRY.items() if x.starter_imports), "torch")
CPU_LANGUAGES = ("cpp",)  # every dtype has a host C type (judge/harness/protocol.py DTYPES)
SLUG_CHARS = re.compile(r"[^a-z0-9_]+")
CPU_POINT_BYTES = 64 * 2**20  # the largest CPU sample point an importer makes


class ImportFailure(Exception):
    """What in the source does not map, by file and field, with what to do about it."""

    def __init__(self, file: str, field: str, message: str, fix: str = ""):
        self.file, self.field, self.message, self.fix = file, field, message, fix
        where = f"{file}: {field}" if field else file
        super().__init__(f"{where}: {message}" + (f" (fix: {fix})" if fix else ""))


@dataclass
class Draft:
    slug: str
    title: str
    source_format: str  # "FlashInfer-Bench definition", ...
    signature: list[dict]
    tests: list[dict]
    tolerance: dict
    checker: str
    tolerance_note: str  # the format's rule and how it maps, for the statement
    reference: str  # reference.py's text
    baseline: str  # baseline.py's text (torch, defines run_kernel)
    description: str = ""
    notes: list[str] = field(default_factory=list)  # said in the statement and by the CLI
    todos: list[str] = field(default_factory=list)  # KJUDGE-TODO lines for problem.yaml
    sources: dict[str, Path] = field(default_factory=dict)  # kept under source/
    files: dict[str, str] = field(default_factory=dict)  # more of the folder's files (a checker)
    gpu_only: str = ""  # why there is no CPU point (the reference needs a GPU)
    packages: list[str] = field(default_factory=list)  # the format's code imports beyond torch
    limits: dict = field(default_factory=lambda: {"compile_s": 180, "run_s": 10})


def run_module(name: str, code: str, filename: str) -> types.ModuleType:
    """The format's code run as module `name`, registered in sys.modules while it runs (a
    dataclass looks its module up there)."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(code, filename, "exec"), module.__dict__)  # noqa: S102
    finally:
        sys.modules.pop(name, None)
    return module


# in every contest image the judge runs: torch, numpy and the kernel languages' packages
BUNDLED = {"torch", "numpy", *(x.packages[0] for x in REGISTRY.values() if x.starter_imports)}


def packages_of(code: str) -> list[str]:
    """The top-level packages `code` imports that are neither the standard library's nor in
    every contest image (einops for KernelBench's Mamba2)."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names - BUNDLED if n not in sys.stdlib_module_names)


def missing_package(exc: BaseException, file: str) -> ImportFailure | None:
    """The refusal for a format's code that imports a package this machine lacks."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return ImportFailure(file, "", f"imports {exc.name}, which is not installed here",
                             f"install it where the judge runs (pip install {exc.name}) and "
                             "import again: the problem will declare it under packages")
    return None


def slug_of(name: str) -> str:
    slug = SLUG_CHARS.sub("_", name.lower()).strip("_")
    return slug if slug[:1].isalpha() else f"p_{slug}"


def write(draft: Draft, out: Path) -> Path:
    """The folder, written whole beside `out` and then moved there: a failure leaves nothing."""
    if out.exists() and any(out.iterdir()):
        raise ImportFailure(str(out), "", "already exists and is not empty",
                            "choose another --out or remove the folder")
    staging = out.with_name(f".{out.name}.importing")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        _write(draft, staging)
        if out.exists():
            out.rmdir()  # empty, checked above
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def _write(draft: Draft, out: Path) -> None:
    spec = {
        "title": draft.title,
        "languages": languages(draft),
        "signature": draft.signature,
        "checker": draft.checker,
        "tolerance": draft.tolerance,
        "limits": draft.limits,
        "metrics": bytes_metric(draft.signature),
        "tests": draft.tests,
        **({"gpu_only": draft.gpu_only} if draft.gpu_only else {}),
        **({"packages": draft.packages} if draft.packages else {}),
    }
    header = [f"# Imported from a {draft.source_format} by `kjudge problem import`; the format's",
              "# files are kept in source/. Review, then run `kjudge problem validate`.",
              *(f"# {TODO_MARKER}: {todo}" for todo in draft.todos)]
    (out / "problem.yaml").write_text("\n".join(header) + "\n" + _yaml(spec))
    (out / "reference.py").write_text(draft.reference)
    (out / "baseline.py").write_text(draft.baseline)
    (out / "statement.md").write_text(statement(draft))
    for name, text in draft.files.items():
        (out / name).write_text(text)
    templates = out / "templates"
    templates.mkdir()
    for name in languages(draft):
        language = get_language(name)
        text = draft.baseline if name == "torch" else starter(name, draft.signature)
        (templates / f"{name}{language.extensions[0]}").write_text(text)
    (out / "solutions" / "AC").mkdir(parents=True)
    (out / "solutions" / "AC" / "baseline.py").write_text(draft.baseline)
    if draft.sources:
        (out / "source").mkdir()
        for name, path in draft.sources.items():
            shutil.copyfile(path, out / "source" / name)


def languages(draft: Draft) -> list[str]:
    """What an imported problem admits: LANGUAGES, and CPU_LANGUAGES where a point runs on
    the CPU."""
    on_cpu = any("cpu" in t.get("devices", ["cpu"]) for t in draft.tests)
    return [*LANGUAGES, *(CPU_LANGUAGES if on_cpu else ())]


def _yaml(spec: dict) -> str:
    """problem.yaml with one line per argument and test point, as the bundled problems read."""
    lines = []
    for key, value in spec.items():
        if key in ("signature", "tests"):
            lines.append(f"{key}:")
            lines += [f"  - {_flow(item)}" for item in value]
        elif isinstance(value, (dict, list)):
            lines.append(f"{key}: {_flow(value)}")
        else:
            lines.append(yaml.safe_dump({key: value}, default_flow_style=False).rstrip())
    return "\n".join(lines) + "\n"


def _flow(item: dict) -> str:
    return yaml.safe_dump(item, sort_keys=False, default_flow_style=True, width=10_000).strip()


def c_headers(signature: list[dict]) -> list[str]:
    dtypes = {a["dtype"] for a in signature}
    headers = ["#include <cstdint>"]
    if "float16" in dtypes:
        headers.append("#include <cuda_fp16.h>")
    if "bfloat16" in dtypes:
        headers.append("#include <cuda_bf16.h>")
    if any(d.startswith("float8") for d in dtypes):
        headers.append("#include <cuda_fp8.h>")
    return headers


def starter(language: str, signature: list[dict]) -> str:
    """A starter that compiles and loads but computes nothing (the contestant's to write)."""
    args = [Arg.model_validate(a) for a in signature]
    declaration = get_language(language).declaration(args)
    if language == "cuda":
        return ("\n".join(c_headers(signature)) + "\n\n// device pointers; launch on the default "
                "stream\n" + declaration + " {\n    // your kernel launches here\n}\n")
    if language in CPU_LANGUAGES:
        return ("#include <cstdint>\n\n// host pointers (the CPU device)\n" + declaration
                + " {\n    // your loops here\n}\n")
    package = get_language(language).starter_imports
    outputs = ", ".join(a.name for a in args if a.role == "output")
    return (f"{package}\n\n{declaration}\n    # write {outputs} with your kernel\n"
            "    raise NotImplementedError\n")


def statement(draft: Draft) -> str:
    lines = [f"# {draft.title}", "", f"Imported from a {draft.source_format}."]
    if draft.description:
        lines += ["", draft.description.strip()]
    lines += ["", "## run_kernel", "",
              "Inputs, then outputs (written in place), then sizes, in this order:", ""]
    for a in draft.signature:
        shape = f" `[{', '.join(str(s) for s in a['shape'])}]`" if "shape" in a else ""
        lines.append(f"- `{a['name']}`: {a['role']} {a['dtype']}{shape}")
    for name in ("cuda", "triton"):
        args = [Arg.model_validate(a) for a in draft.signature]
        lines += ["", f"{name}: `{get_language(name).declaration(args)}`"]
    lines += ["", "## Checking", "", draft.tolerance_note]
    if draft.notes:
        lines += ["", "## Notes", "", *(f"- {note}" for note in draft.notes)]
    return "\n".join(lines) + "\n"


def scalar_dtype(dtype: str, file: str, field: str) -> str:
    if dtype not in SCALAR_DTYPES:
        raise ImportFailure(file, field, f"a scalar of dtype {dtype}",
                            f"a scalar argument is one of {', '.join(SCALAR_DTYPES)}")
    return dtype


def tensor_dtype(dtype: str, file: str, field: str) -> str:
    if dtype not in DTYPES:
        raise ImportFailure(file, field, f"dtype {dtype!r} has no counterpart here",
                            f"use one of {', '.join(DTYPES)}")
    return dtype


def bytes_metric(signature: list[dict]) -> dict:
    """`metrics.bytes`: every tensor read or written once, for the GB/s figures."""
    import torch

    terms = [" * ".join([str(getattr(torch, a["dtype"]).itemsize), *map(str, a["shape"])])
             for a in signature if a["role"] != "scalar"]
    return {"bytes": " + ".join(terms) or "0"}


def point_name(params: dict, taken: set[str]) -> str:
    """A test point's name from its parameters (`M256_N64`), made unique."""
    base = "_".join(f"{k}{v}" for k, v in params.items()) or "point"
    base = re.sub(r"[^A-Za-z0-9_.-]", "", base)[:60] or "point"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


DIVISORS = (2, 4, 8, 16, 32, 64, 128, 256)


def fit_size(values: list[int], cases: list[dict], params: list[str]) -> int | str | None:
    """The smallest expression over the integer `params` that gives `values` in every case (a
    size seen once per case): a parameter, one scaled or divided by a power of two (rounded
    down or up), one divided by or multiplied with another, an affine combination of one or
    two (`size - kernelsize + 1`), else the constant all cases share. An expression with as
    many unknowns as cases is not trusted: one more case must confirm it. None when nothing
    fits."""
    if len(set(values)) == 1 and not any(all(c[p] == values[0] for c in cases) for p in params):
        return values[0]
    columns = {p: [c[p] for c in cases] for p in params}
    for text, got in _candidates(columns):
        if got == values:
            return text
    for text in (_affine(values, columns, 1), _affine(values, columns, 2)):
        if text is not None:
            return text
    return values[0] if len(set(values)) == 1 else None


def _candidates(columns: dict[str, list[int]]):
    for p, xs in columns.items():
        yield p, xs
    for p, xs in columns.items():
        for d in DIVISORS:
            yield f"{p} // {d}", [x // d for x in xs]
            yield f"({p} + {d - 1}) // {d}", [-(-x // d) for x in xs]
            yield f"{p} * {d}", [x * d for x in xs]
    for p, xs in columns.items():
        for q, ys in columns.items():
            if p != q and all(ys):
                yield f"{p} // {q}", [x // y for x, y in zip(xs, ys)]
                yield f"({p} + {q} - 1) // {q}", [-(-x // y) for x, y in zip(xs, ys)]
            if p < q:
                yield f"{p} * {q}", [x * y for x, y in zip(xs, ys)]


def _affine(values: list[int], columns: dict[str, list[int]], terms: int) -> str | None:
    """a·p (+ b·q) + c with integer coefficients, solved exactly and confirmed by a further
    case."""
    from fractions import Fraction
    from itertools import combinations

    if len(values) <= terms + 1:
        return None
    for names in combinations(columns, terms):
        rows = [[Fraction(columns[n][i]) for n in names] + [Fraction(1)] for i in
                range(len(values))]
        solution = _solve(rows, [Fraction(v) for v in values])
        if solution is None or any(x.denominator != 1 for x in solution):
            continue
        coeffs = [int(x) for x in solution]
        if any(coeffs[:-1]) and all(sum(c * r for c, r in zip(coeffs, row)) == v
                                    for row, v in zip(rows, values)):
            return _affine_text(names, coeffs)
    return None


def _solve(rows: list[list], values: list) -> list | None:
    """A solution of rows · x = values from the first independent rows (Gauss-Jordan), or
    None."""
    from itertools import combinations

    width = len(rows[0])
    for picked in combinations(range(len(rows)), width):
        matrix = [list(rows[i]) + [values[i]] for i in picked]
        for col in range(width):
            pivot = next((r for r in range(col, width) if matrix[r][col] != 0), None)
            if pivot is None:
                break
            matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
            for r in range(width):
                if r != col and matrix[r][col] != 0:
                    factor = matrix[r][col] / matrix[col][col]
                    matrix[r] = [a - factor * b for a, b in zip(matrix[r], matrix[col])]
        else:
            return [matrix[i][width] / matrix[i][i] for i in range(width)]
    return None


def _affine_text(names: tuple[str, ...], coeffs: list[int]) -> str:
    parts = []
    for name, c in zip(names, coeffs[:-1]):
        if c:
            term = name if abs(c) == 1 else f"{abs(c)} * {name}"
            parts.append(("- " if c < 0 else "+ ") + term)
    if coeffs[-1]:
        parts.append(("- " if coeffs[-1] < 0 else "+ ") + str(abs(coeffs[-1])))
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]
