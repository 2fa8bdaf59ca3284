"""Per-problem rules checked on the source before compiling (a violation is RV).

`regex` applies to any language; `forbid_imports` and `forbid_calls` apply to Python sources and
resolve import aliases (`import torch as t; t.matmul(...)` is `torch.matmul`). A call entry that
starts with a dot (`.matmul`) matches that method name on any object.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from judge.problem import Rule

PYTHON_LANGUAGES = ("triton", "tilelang", "torch")


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
    aliases: dict[str, str] = {}
    hits: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[(alias.asname or alias.name).split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0])
                if _matches(alias.name, rule.forbid_imports):
                    hits.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                aliases[alias.asname or alias.name] = full
                if _matches(node.module, rule.forbid_imports) or _matches(
                        full, rule.forbid_imports):
                    hits.append(node.lineno)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and rule.forbid_calls:
            name = _dotted(node.func, aliases)
            methods = [f for f in rule.forbid_calls if f.startswith(".")]
            if (name and _matches(name, [f for f in rule.forbid_calls if not f.startswith(".")])
                    or isinstance(node.func, ast.Attribute)
                    and f".{node.func.attr}" in methods):
                hits.append(node.lineno)
    return min(hits) if hits else None


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))
