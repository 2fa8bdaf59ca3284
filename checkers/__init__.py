"""Special judges: plain functions (out, ref, *, rtol, atol, matched_ratio) -> CheckReport.

Trusted code: they run in the judge's process, never in the contestant's. A built-in checker is
a module of this package defining `check` (the list below is this package's modules, imported
only when used: they import torch); a problem may ship its own as a .py file defining `check`
with the same signature.
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
    return module.check


__all__ = ["BUILTIN_CHECKERS", "CheckReport", "Checker", "Mismatch", "get_checker", "merge"]
