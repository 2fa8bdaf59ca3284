"""Special judges: plain functions (out, ref, *, rtol, atol, matched_ratio) -> CheckReport.

Trusted code: they run in the judge's process, never in the contestant's. A built-in checker is
a module of this package defining `check` (the list below is this package's modules, imported
only when used: they import torch); a problem may ship its own as a .py file defining `check`
with the same signature, or `check_call(outputs, expected, inputs, *, rtol, atol,
matched_ratio)`, which checks one call whole (every output by name, with the call's inputs):
what a property check needs (Q orthogonal and Q·R = A, where many answers are right).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from pathlib import Path

from checkers.report import CheckReport, Mismatch, merge

Checker = Callable[..., CheckReport]
BUILTIN_CHECKERS = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                                if m.name != "report"))


def get_checker(name: str, problem_dir: Path | None = None) -> Checker:
    if name in BUILTIN_CHECKERS:
        return importlib.import_module(f"{__name__}.{name}").check
    if problem_dir is None or not name.endswith(".py"):
        raise ValueError(f"unknown checker {name!r}")
    spec = importlib.util.spec_from_file_location(f"kjudge_checker_{problem_dir.name}",
                                                  problem_dir / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, WHOLE_CALL, None) or module.check


WHOLE_CALL = "check_call"


def checks_whole_calls(checker: Checker) -> bool:
    """Whether `checker` takes a call's outputs and inputs at once (the judge keeps inputs)."""
    return getattr(checker, "__name__", "") == WHOLE_CALL


def check_outputs(checker: Checker, got: dict, expected: dict, inputs: dict, *, rtol: float,
                  atol: float, matched_ratio: float, comparable=None) -> CheckReport:
    """One call's outputs checked: all at once, as the run wrote them, by a `check_call`
    checker; else each against its reference, both made `comparable` first (scaled low
    precision outputs dequantised) where given."""
    if checks_whole_calls(checker):
        return checker(got, expected, inputs, rtol=rtol, atol=atol, matched_ratio=matched_ratio)
    if comparable is not None:
        got, expected = comparable(got, expected)
    return merge({name: checker(got.get(name), value, rtol=rtol, atol=atol,
                                matched_ratio=matched_ratio)
                  for name, value in expected.items()}, matched_ratio)


__all__ = ["BUILTIN_CHECKERS", "CheckReport", "Checker", "Mismatch", "check_outputs",
           "checks_whole_calls", "get_checker", "merge"]
