"""Safe arithmetic expressions from problem.yaml (shapes, bytes, flops, score functions).

Only numbers, names bound by the caller, + - * / // % **, comparisons, conditional
expressions and a few math functions are allowed: problem folders are data, not code.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Mapping

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
FUNCTIONS = {
    "min": min,
    "max": max,
    "abs": abs,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "ceil": math.ceil,
    "floor": math.floor,
    "ceildiv": lambda a, b: -(-a // b),
}


class ExpressionError(ValueError):
    """An expression that is not allowed or cannot be evaluated."""


@functools.lru_cache(maxsize=4096)  # a timed batch draws hundreds of input sets per round
def parse(text: str) -> ast.Expression:
    """The checked tree of `text` (shared between callers: never modified)."""
    try:
        tree = ast.parse(str(text), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not a valid expression: {text!r} ({exc.msg})") from None
    for node in ast.walk(tree):
        allowed = (
            ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp,
            ast.Compare, ast.IfExp, ast.Call, *_BINARY, *_UNARY, *_COMPARE,
        )
        if not isinstance(node, allowed):
            raise ExpressionError(f"{type(node).__name__} is not allowed in {text!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise ExpressionError(f"only numbers are allowed as constants in {text!r}")
        if isinstance(node, ast.Call) and (
            not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords
        ):
            raise ExpressionError(
                f"only the functions {', '.join(sorted(FUNCTIONS))} may be called in {text!r}"
            )
    return tree


def names(text: str) -> set[str]:
    """The free variable names an expression uses (function names excluded)."""
    tree = parse(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def evaluate(text: str | int | float, env: Mapping[str, float]) -> float | int:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return text
    return _eval(parse(str(text)).body, env, str(text))


def _eval(node: ast.AST, env: Mapping[str, float], text: str):
    evaluate = _EVALUATORS.get(type(node))
    if evaluate is None:
        raise ExpressionError(f"cannot evaluate {text!r}")
    return evaluate(node, env, text)


def _name(node: ast.Name, env: Mapping[str, float], text: str):
    if node.id not in env:
        raise ExpressionError(f"unknown name {node.id!r} in {text!r}; known: {sorted(env)}")
    return env[node.id]


def _binary(node: ast.BinOp, env: Mapping[str, float], text: str):
    left, right = _eval(node.left, env, text), _eval(node.right, env, text)
    try:
        return _BINARY[type(node.op)](left, right)
    except (ZeroDivisionError, OverflowError) as exc:
        raise ExpressionError(f"{exc} in {text!r}") from None


def _compare(node: ast.Compare, env: Mapping[str, float], text: str):
    left = _eval(node.left, env, text)
    for op, comparator in zip(node.ops, node.comparators):
        right = _eval(comparator, env, text)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


def _call(node: ast.Call, env: Mapping[str, float], text: str):
    args = [_eval(a, env, text) for a in node.args]
    try:
        return FUNCTIONS[node.func.id](*args)
    except (ValueError, TypeError) as exc:
        raise ExpressionError(f"{exc} in {text!r}") from None


_EVALUATORS = {
    ast.Constant: lambda node, env, text: node.value,
    ast.Name: _name,
    ast.BinOp: _binary,
    ast.UnaryOp: lambda node, env, text: _UNARY[type(node.op)](_eval(node.operand, env, text)),
    ast.Compare: _compare,
    ast.IfExp: lambda node, env, text: _eval(
        node.body if _eval(node.test, env, text) else node.orelse, env, text),
    ast.Call: _call,
}
