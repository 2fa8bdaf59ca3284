"""Special judges: plain functions (out, ref, *, rtol, atol, matched_ratio, **args) -> CheckReport.

Trusted code: they run in the judge's process, never in the contestant's. A built-in checker is
a module of this package defining `check` (the list below is this package's modules, imported
only when used: they import torch); a problem may ship its own as a .py file defining `check`
with the same signature, or `check_call(outputs, expected, inputs, *, rtol, atol,
matched_ratio)`, which checks one call whole (every output by name, with the call's inputs):
what a property check needs (Q orthogonal and Q·R = A, where many answers are right).
Beyond the tolerance, a checker takes the keyword arguments the problem gives it
(`checker: {name: ..., args: {...}}` in problem.yaml, checked against its signature).
"""

from __future__ import annotations

import ast
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


TOLERANCE = ("rtol", "atol", "matched_ratio")  # what every checker gets from `tolerance`


def checker_params(name: str, problem_dir: Path | None = None) -> tuple[set[str], bool] | None:
    """The keyword arguments a checker's entry point takes beyond the tolerance, and whether it
    takes any (**kwargs); read from its source, not imported (checkers import torch, which the
    API process never does). None when it is neither a built-in nor a file of the problem."""
    path = (Path(__file__).parent / f"{name}.py" if name in BUILTIN_CHECKERS
            else problem_dir / name if problem_dir is not None and name.endswith(".py") else None)
    if path is None or not path.is_file():
        return None
    functions = {node.name: node for node in ast.parse(path.read_text()).body
                 if isinstance(node, ast.FunctionDef)}
    entry = functions.get(WHOLE_CALL) or functions.get("check")
    if entry is None:
        return set(), False
    positional = 3 if entry.name == WHOLE_CALL else 2  # (outputs, expected, inputs) / (out, ref)
    names = [a.arg for a in entry.args.posonlyargs + entry.args.args][positional:]
    names += [a.arg for a in entry.args.kwonlyargs]
    return set(names) - set(TOLERANCE), entry.args.kwarg is not None


def checks_whole_calls(checker: Checker) -> bool:
    """Whether `checker` takes a call's outputs and inputs at once (the judge keeps inputs)."""
    return getattr(checker, "__name__", "") == WHOLE_CALL


def check_outputs(checker: Checker, got: dict, expected: dict, inputs: dict, *, rtol: float,
                  atol: float, matched_ratio: float, comparable=None,
                  args: dict | None = None) -> CheckReport:
    """One call's outputs checked: all at once, as the run wrote them, by a `check_call`
    checker; else each against its reference, both made `comparable` first (scaled low
    precision outputs dequantised) where given. `args`: the problem's own arguments to its
    checker (problem.yaml `checker: {name, args}`)."""
    args = args or {}
    if checks_whole_calls(checker):
        return checker(_beside(got, expected, inputs), expected, inputs, rtol=rtol, atol=atol,
                       matched_ratio=matched_ratio, **args)
    if comparable is not None:
        got, expected = comparable(got, expected)
    return merge({name: checker(got.get(name), value, rtol=rtol, atol=atol,
                                matched_ratio=matched_ratio, **args)
                  for name, value in expected.items()}, matched_ratio)


def _beside(got: dict, expected: dict, inputs: dict) -> dict:
    """The run's outputs (read back on the host) on the device of the reference's tensors (on
    a GPU the reference runs there): a whole-call checker gets every tensor on one device."""
    device = next((v.device for v in (*expected.values(), *inputs.values())
                   if hasattr(v, "device")), None)
    if device is None:
        return got
    return {name: value.to(device) if hasattr(value, "to") else value
            for name, value in got.items()}


__all__ = ["BUILTIN_CHECKERS", "TOLERANCE", "CheckReport", "Checker", "Mismatch", "check_outputs",
           "checker_params", "checks_whole_calls", "get_checker", "merge"]
