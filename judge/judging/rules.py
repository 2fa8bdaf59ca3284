"""Per-problem rules checked on the source before compiling (a violation is RV).

`regex` applies to any language; `forbid_imports` and `forbid_calls` apply to Python sources and
resolve import aliases (`import torch as t; t.matmul(...)` is `torch.matmul`). A call entry that
starts with a dot (`.matmul`) matches that method name on any object.

`allow_torch` is the allow-list form, which a method or an alias cannot slip past: outside the
source's kernels (functions decorated as Triton or TileLang kernels, whose calls are the DSL's),
every call of a PyTorch function and every call of a tensor method's name on anything that is not
another module must be listed; dynamic access (`getattr`, `eval`, ...) is refused with it.
Importing modules that reach into the process (`gc`, `ctypes`, `sys`, ...) and naming dunder
attributes are refused with it too. Operators (`x * y`) are not calls: the ATen operators
run_kernel runs are recorded at run time (`operator_rule`, enforced by the harness: RV).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from judge.languages import KERNEL_DECORATORS, PYTHON_LANGUAGES
from judge.problem.schema import Rule

# What `plumbing` allows: allocation, views, copies and metadata, no arithmetic.
PLUMBING = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "Size", "is_tensor",
    "finfo", "iinfo", "device", "cuda.synchronize", "cuda.current_stream", "cuda.current_device",
    "cuda.get_device_properties", "cuda.device_count", "cuda.is_available",
    ".size", ".stride", ".numel", ".dim", ".data_ptr", ".element_size", ".storage_offset",
    ".is_contiguous", ".contiguous", ".view", ".reshape", ".flatten", ".unsqueeze", ".squeeze",
    ".permute", ".transpose", ".t", ".expand", ".narrow", ".select", ".as_strided", ".unflatten",
    ".copy_", ".clone", ".zero_", ".fill_", ".new_empty", ".new_zeros", ".get_device",
    ".is_floating_point", ".nelement",
})
# `plumbing` at run time: the ATen operators (overload packets, as a torch dispatch mode sees them)
# that allocation, views, copies and metadata execute.
PLUMBING_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "zero_", "fill_", "copy_", "clone", "_to_copy", "detach", "alias",
    "lift_fresh", "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t",
    "transpose", "permute", "expand", "narrow", "select", "slice", "unsqueeze", "squeeze",
    "flatten", "unflatten", "split", "split_with_sizes", "unbind", "contiguous", "view_as",
    "resolve_conj", "resolve_neg", "_local_scalar_dense", "is_nonzero", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset",
})
# modules through which Python reaches into the process (the harness, the operator recorder):
# importing them is refused where a rule has an allow-list, as is any dunder attribute
INTROSPECTION = ("gc", "ctypes", "_ctypes", "cffi", "inspect", "sys", "importlib", "builtins",
                 "types", "threading", "_thread", "multiprocessing", "signal")
DYNAMIC_ACCESS = ("getattr", "eval", "exec", "__import__", "globals", "vars", "compile")


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"rule {self.rule}: {self.message} (line {self.line}: {self.text.strip()})"


def check_rules(source: str, language: str, rules: Sequence[Rule]) -> Violation | None:
    lines = source.splitlines()
    tree = _parse(source) if language in PYTHON_LANGUAGES else None
    for rule in rules:
        if language not in rule.languages:
            continue
        found = _regex_hit(source, rule)
        if found is None and tree is not None:
            found = _ast_hit(tree, rule)
        if found is not None:
            text = lines[found - 1] if 0 < found <= len(lines) else ""
            return Violation(rule.id, rule.message, found, text)
    return None


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None  # the compile step reports it


def _regex_hit(source: str, rule: Rule) -> int | None:
    if not rule.regex:
        return None
    match = re.search(rule.regex, source, re.MULTILINE)
    return source.count("\n", 0, match.start()) + 1 if match else None


def _matches(name: str, forbidden: Sequence[str]) -> bool:
    return any(name == f or name.startswith(f + ".") for f in forbidden)


def _ast_hit(tree: ast.Module, rule: Rule) -> int | None:
    """The first line the rule forbids: an import, a PyTorch call outside the allow-list or a
    look behind it, a forbidden call or method."""
    aliases: dict[str, str] = {}
    hits = _import_hits(tree, rule.forbid_imports, aliases)
    if rule.allow_torch is not None:
        hits.extend(_not_allowed(tree, rule.allow_torch, aliases))
        hits.extend(_introspection(tree))
    if rule.forbid_calls:
        hits.extend(_call_hits(tree, rule.forbid_calls, aliases))
    return min(hits) if hits else None


def _import_hits(tree: ast.Module, forbidden: Sequence[str], aliases: dict[str, str]) -> list[int]:
    """Lines importing what is forbidden; `aliases` learns every name an import binds."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[(alias.asname or alias.name).split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0])
                if _matches(alias.name, forbidden):
                    hits.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                aliases[alias.asname or alias.name] = full
                if _matches(node.module, forbidden) or _matches(full, forbidden):
                    hits.append(node.lineno)
    return hits


def _call_hits(tree: ast.Module, forbidden: Sequence[str], aliases: dict[str, str]) -> list[int]:
    """Lines calling a forbidden function (aliases resolved) or method (`.name`)."""
    methods = [f for f in forbidden if f.startswith(".")]
    functions = [f for f in forbidden if not f.startswith(".")]
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func, aliases)
            if (name and _matches(name, functions)
                    or isinstance(node.func, ast.Attribute) and f".{node.func.attr}" in methods):
                hits.append(node.lineno)
    return hits


def _not_allowed(tree: ast.Module, allowed: Sequence[str], aliases: dict[str, str]) -> list[int]:
    """Lines calling PyTorch outside the allow-list (kernels' own calls excepted)."""
    import torch

    allow = set()
    for entry in allowed:
        allow |= PLUMBING if entry == "plumbing" else {entry.removeprefix("torch.")}
    tensor_methods = {m for m in dir(torch.Tensor) if not m.startswith("__")}
    hits = []
    for node in _calls_outside_kernels(tree, aliases):
        name = _dotted(node.func, aliases)
        if isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_ACCESS \
                and node.func.id not in aliases:
            hits.append(node.lineno)
        elif name and name.startswith("torch."):
            if name.removeprefix("torch.") not in allow:
                hits.append(node.lineno)
        elif isinstance(node.func, ast.Attribute) and _root(node.func) not in aliases:
            method = node.func.attr  # on a value, not on an imported module: maybe a tensor
            if method in tensor_methods and f".{method}" not in allow:
                hits.append(node.lineno)
    return hits


def _introspection(tree: ast.Module) -> list[int]:
    """Lines importing a module that reaches into the process, or naming a dunder attribute."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__") \
                and node.attr.endswith("__"):
            hits.append(node.lineno)
            continue
        else:
            continue
        if any(_matches(name, INTROSPECTION) for name in names):
            hits.append(node.lineno)
    return hits


def allowed_operators(rule: Rule) -> list[str]:
    """The ATen operators `rule.allow_torch` lets run_kernel run (explicit entries are matched
    against operator names: `torch.mm` allows `mm`)."""
    allowed: set[str] = set()
    for entry in rule.allow_torch or ():
        allowed |= PLUMBING_OPS if entry == "plumbing" else {entry.removeprefix("torch.")
                                                            .removeprefix(".")}
    return sorted(allowed)


def operator_rule(language: str, rules: Sequence[Rule]) -> dict | None:
    """The first allow-list rule covering `language`, as the harness's run-time recorder takes
    it (judge/harness/protocol.py: config `operator_rule`), or None."""
    for rule in rules:
        if language in rule.languages and rule.allow_torch is not None:
            return {"id": rule.id, "message": rule.message, "allowed": allowed_operators(rule)}
    return None


def _calls_outside_kernels(tree: ast.AST, aliases: dict[str, str]):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _is_kernel_decorator(_decorator_name(d, aliases)) for d in node.decorator_list):
            continue  # a Triton or TileLang kernel: its calls are the DSL's
        if isinstance(node, ast.Call):
            yield node
        yield from _calls_outside_kernels(node, aliases)


def _is_kernel_decorator(name: str) -> bool:
    """triton.jit, triton.autotune, tilelang.jit, tilelang.language.prim_func, ... as imported
    (a decorator of the source's own named `jit` is not one)."""
    return name.rsplit(".", 1)[-1] in KERNEL_DECORATORS.get(name.split(".")[0], ())


def _root(node: ast.AST) -> str | None:
    """The name an attribute chain starts from (`x` in `x.a.b`), None for an expression."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _decorator_name(node: ast.AST, aliases: dict[str, str]) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return _dotted(node, aliases) or ""


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))
