"""Special judges: plain functions (out, ref, *, rtol, atol, matched_ratio) -> CheckReport.

Trusted code: they run in the judge's process, never in the contestant's. A problem may ship
its own checker as a .py file defining `check` with the same signature.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from checkers import allclose, exact
from checkers.report import CheckReport, Mismatch, merge

Checker = Callable[..., CheckReport]
BUILTIN: dict[str, Checker] = {"allclose": allclose.check, "exact": exact.check}


def get_checker(name: str, problem_dir: Path | None = None) -> Checker:
    if name in BUILTIN:
        return BUILTIN[name]
    if problem_dir is None or not name.endswith(".py"):
        raise ValueError(f"unknown checker {name!r}")
    spec = importlib.util.spec_from_file_location(f"kjudge_checker_{problem_dir.name}",
                                                  problem_dir / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.check


__all__ = ["BUILTIN", "CheckReport", "Checker", "Mismatch", "get_checker", "merge"]
