"""The trusted side of a test point: inputs from the secret seed, expected outputs from the reference.

Runs in the judge's process, which never runs contestant code. The problem's reference.py defines
    make_inputs(params, generator, device) -> {input name: tensor}
    reference(**inputs_and_scalars) -> {output name: tensor} (or one tensor for one output)
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch

from checkers import check_outputs, get_checker
from judge.problem import exprs
from judge.problem.schema import Problem, TestPoint


class ProblemRuntimeError(Exception):
    """The problem's own code misbehaved: a judging error (SE), never the contestant's fault."""


@dataclass
class TestCase:
    """One input set of a test point: what the submission gets and what it must produce."""

    inputs: dict[str, torch.Tensor | int | float]  # tensors and scalars, by argument name
    expected: dict[str, torch.Tensor]  # on the CPU
    output_specs: dict[str, dict]  # name -> {"shape": [...], "dtype": "..."}


def load_module(path: Path) -> ModuleType:
    name = f"kjudge_problem_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass in it looks its module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def derive_seed(secret: int, test: str, index: int | str) -> int:
    digest = hashlib.sha256(f"{secret}:{test}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


class Reference:
    def __init__(self, problem: Problem, device: str):
        self.problem = problem
        self.device = torch.device(device)
        try:
            self.module = load_module(problem.path / problem.spec.reference)
        except Exception as exc:
            raise ProblemRuntimeError(f"{problem.spec.reference} failed to import: {exc}") from exc
        for fn in ("make_inputs", "reference"):
            if not callable(getattr(self.module, fn, None)):
                raise ProblemRuntimeError(f"{problem.spec.reference} does not define {fn}()")
        # a timed round draws up to a thousand small sets: what does not change between them is
        # worked out once (a test point's scalars and input shapes; a generator per thread,
        # reseeded for each set), ~25 -> ~12 us a set of vector_add's 7 floats
        self._layouts: dict[str, tuple[dict[str, int | float], list[tuple[str, str, list[int]]]]] = {}
        self._local = threading.local()

    def scalars(self, test: TestPoint) -> dict[str, int | float]:
        values = {}
        for arg in self.problem.spec.signature:
            if arg.role == "scalar":
                value = exprs.evaluate(arg.value if arg.value is not None else arg.name,
                                       test.params)
                values[arg.name] = int(value) if arg.dtype.startswith("int") else float(value)
        return values

    @staticmethod
    def input_shape(arg, test: TestPoint) -> list[int]:
        return [int(exprs.evaluate(s, test.params)) for s in arg.shape]

    def output_specs(self, test: TestPoint) -> dict[str, dict]:
        return {
            a.name: {"shape": [int(exprs.evaluate(s, test.params)) for s in a.shape],
                     "dtype": a.dtype}
            for a in self.problem.outputs
        }

    def case(self, test: TestPoint, seed: int) -> TestCase:
        inputs = self.inputs(test, seed)
        return TestCase(inputs, self.expected(test, inputs), self.output_specs(test))

    def inputs(self, test: TestPoint, seed: int) -> dict[str, torch.Tensor | int | float]:
        """The inputs (tensors and scalars, by argument name) that `seed` draws for `test`."""
        scalars, tensors = self._layout(test)
        generator = getattr(self._local, "generator", None)
        if generator is None:
            generator = self._local.generator = torch.Generator(device=self.device)
        generator.manual_seed(seed)
        try:
            drawn = self.module.make_inputs(dict(test.params), generator, self.device)
        except Exception as exc:
            raise ProblemRuntimeError(f"make_inputs failed on {test.name}: {exc!r}") from exc
        inputs = {name: drawn.get(name) for name, _, _ in tensors}
        for name, dtype, shape in tensors:
            self._check_tensor("make_inputs", test, name, inputs[name], dtype, shape)
        inputs.update(scalars)
        return inputs

    def differs_in_parallel(self, test: TestPoint, seeds: range = range(8)) -> str:
        """What the problem's code does otherwise on several threads at once than one at a time
        ('' when nothing), as the judge calls it: a timed round's sets drawn and its kept calls
        checked on every CPU at once. Draws must be equal; the reference's outputs within the
        problem's tolerance (a sum may run in another order on another thread)."""
        alone = [self.inputs(test, seed) for seed in seeds]
        expected = [self.expected(test, inputs) for inputs in alone]
        with ThreadPoolExecutor(4) as pool:
            together = list(pool.map(lambda seed: self.inputs(test, seed), seeds))
            outputs = list(pool.map(lambda inputs: self.expected(test, inputs), alone))
        if any(not torch.equal(a[name], b[name]) for a, b in zip(alone, together)
               for name in a if isinstance(a[name], torch.Tensor)):
            return (f"{self.problem.spec.reference}: make_inputs draws other inputs on several "
                    "threads at once (the process's global RNG?): draw from the generator it "
                    "is given")
        spec = self.problem.spec
        checker = get_checker(spec.checker.name, self.problem.path)
        for inputs, one, many in zip(alone, expected, outputs):
            report = check_outputs(checker, many, one, inputs, rtol=spec.tolerance.rtol,
                                   atol=spec.tolerance.atol,
                                   matched_ratio=spec.tolerance.matched_ratio,
                                   args=spec.checker.args)
            if not report.passed:
                return (f"{spec.reference}: reference gives other outputs on several threads "
                        f"at once than one at a time ({report.message}): it shares state "
                        "between calls (a module whose weights are swapped in, a scratch "
                        "buffer, a global); keep each call's own, or hold a lock around it")
        return ""

    def _layout(self, test: TestPoint):
        """`test`'s scalars, and each input tensor's (name, dtype, shape)."""
        key = f"{test.name} {sorted(test.params.items())!r}"
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = (self.scalars(test), [
                (a.name, a.dtype, self.input_shape(a, test)) for a in self.problem.inputs])
        return layout

    def expected(self, test: TestPoint, inputs: dict) -> dict[str, torch.Tensor]:
        """The reference's outputs for `inputs` (which it cannot modify), on the CPU."""
        specs = self.output_specs(test)
        args = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
        try:
            with torch.no_grad():
                result = self.module.reference(**args)
        except Exception as exc:
            raise ProblemRuntimeError(f"reference failed on {test.name}: {exc!r}") from exc
        if isinstance(result, torch.Tensor) and len(specs) == 1:
            result = {next(iter(specs)): result}
        expected = {}
        for name, spec in specs.items():
            value = result.get(name) if isinstance(result, dict) else None
            self._check_tensor("reference", test, name, value, spec["dtype"], spec["shape"])
            expected[name] = value.detach().to("cpu")
        return expected

    @staticmethod
    def _check_tensor(where: str, test: TestPoint, name: str, value, dtype: str,
                      shape: list[int]) -> None:
        if not isinstance(value, torch.Tensor):
            raise ProblemRuntimeError(f"{where} gave no tensor {name!r} on {test.name}")
        if str(value.dtype).removeprefix("torch.") != dtype or list(value.shape) != shape:
            raise ProblemRuntimeError(
                f"{where} gave {name!r} as {value.dtype} {list(value.shape)} on {test.name}; "
                f"problem.yaml declares {dtype} {shape}")
