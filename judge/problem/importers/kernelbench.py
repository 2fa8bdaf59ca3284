"""KernelBench: one Python file with `class Model(nn.Module)`, module-level constants,
`get_inputs()` and `get_init_inputs()`; submissions define `ModelNew` with the same forward.

The module's constants (ints and floats assigned at its top level, which get_inputs and
get_init_inputs read when called) become test point parameters and scalar arguments; forward's
arguments and the module's parameters and buffers become explicit inputs (weights drawn by the
module's own initialisation, from the judge's seed), forward's result the output. Shapes come
from running the model on the meta device: each dimension is a constant's name where one fits,
else a parameter of its own per test point. The file's own sizes are the GPU test point; a copy
with the input sizes halved until it is small is the CPU sample point. Checked as KernelBench
checks (torch.allclose, atol = rtol = 1e-4 in float32, 1e-2 in half precision).
"""

from __future__ import annotations

import ast
import inspect
import types
from pathlib import Path

from judge.problem.importers.draft import (
    Draft,
    ImportFailure,
    slug_of,
    tensor_dtype,
)

FORMAT = "KernelBench problem"
CPU_BYTES = 8 * 2**20  # a CPU point's tensors, all together
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}  # kernelbench eval.py


def discover(folder: Path) -> list[Path]:
    """Problem files: the file itself, else the folder's .py files (a level's folder)."""
    return [folder] if folder.is_file() else list(folder.glob("*.py"))


def convert(source: Path) -> Draft:
    if source.is_dir() or source.suffix != ".py":
        raise ImportFailure(str(source), "", "not a KernelBench problem file (.py)")
    text = source.read_text()
    constants = _constants(text, source.name)
    module = _load(text, source)
    forward_args = [p for p in inspect.signature(module.Model.forward).parameters if p != "self"]
    original = {k: getattr(module, k) for k in constants}
    probe = _probe(module, original, forward_args, source.name)
    reduced = _reduce(module, original, probe, forward_args, source.name)
    points = [("full", original, probe, ["cuda"])]
    if reduced is not None:
        points.insert(0, ("cpu", reduced[0], reduced[1], ["cpu"]))
    signature, tests = _signature_and_tests(points, constants, forward_args, probe)
    dtype = next((a["dtype"] for a in signature if a["role"] == "output"), "float32")
    tol = TOLERANCE.get(dtype, 1e-4)
    todos = [] if reduced else ["no CPU-sized version found (halving the input sizes broke "
                                "the model or stayed too large): add a test point with "
                                "devices: [cpu]"]
    return Draft(
        slug=slug_of(source.stem), title=source.stem, source_format=FORMAT,
        signature=signature, tests=tests,
        tolerance={"rtol": tol, "atol": tol, "matched_ratio": 1.0}, checker="allclose",
        tolerance_note=(
            f"As KernelBench checks ({dtype}): |out - ref| <= atol + rtol·|ref|, atol = rtol = "
            f"{tol:g}, every element (checker `allclose`). KernelBench calls "
            "torch.allclose(ref, new), which scales rtol by the new output; here it scales by "
            "the reference's."),
        reference=_code(text, "reference", source.stem, probe, forward_args, constants)
        + REFERENCE,
        baseline=_code(text, "baseline", source.stem, probe, forward_args, constants)
        + _baseline(signature),
        description=(inspect.getdoc(module.Model) or ""),
        notes=[f"The module's constants ({', '.join(constants)}) are parameters and scalar "
               "arguments; the GPU point keeps the file's values.",
               "ModelNew's parameters and buffers are explicit inputs here: "
               + (", ".join(f"`{n}` ({p})" for n, p in probe["parameters"].items()) or "none")
               + "; they are drawn by Model's own initialisation from the judge's seed, and "
               "get_inputs runs with the global RNG seeded from it (forked: the judge's own "
               "state is untouched)."],
        todos=todos, sources={source.name: source})


def _constants(text: str, file: str) -> list[str]:
    """Names assigned a number at the module's top level (batch_size = 16, dim = 4096 * 2)."""
    names = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            try:
                value = eval(compile(ast.Expression(node.value), file, "eval"), {})  # noqa: S307
            except Exception:  # noqa: BLE001 - not a plain number
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                names.append(node.targets[0].id)
    return names


def _load(text: str, source: Path) -> types.ModuleType:
    module = types.ModuleType(f"kjudge_kernelbench_{slug_of(source.stem)}")
    try:
        exec(compile(text, str(source), "exec"), module.__dict__)  # noqa: S102
    except Exception as exc:
        raise ImportFailure(source.name, "", f"does not import: {exc!r}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ImportFailure(source.name, name, "not defined",
                                "a KernelBench problem defines Model, get_inputs and "
                                "get_init_inputs")
    return module


def _probe(module, constants: dict, forward_args: list[str], file: str) -> dict:
    """The inputs', parameters' and outputs' dtypes and shapes with these constants, on the
    meta device (nothing is computed)."""
    import torch

    vars(module).update(constants)
    try:
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
            inputs = list(module.get_inputs())
            result = model(*inputs)
    except Exception as exc:
        raise ImportFailure(file, "Model", f"does not run on the meta device with {constants}: "
                            f"{exc!r}") from None
    if len(inputs) != len(forward_args):
        raise ImportFailure(file, "get_inputs", f"{len(inputs)} values for forward's "
                            f"{len(forward_args)} arguments")
    for name, value in zip(forward_args, inputs):
        if not isinstance(value, torch.Tensor):
            raise ImportFailure(file, "get_inputs", f"{name} is a {type(value).__name__}",
                                "make it a module constant read by forward")
    results = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    tensors = {n: t for n, t in zip(forward_args, inputs)}
    parameters = {}
    for path, tensor in [*model.named_parameters(), *model.named_buffers()]:
        name = path.replace(".", "_")
        tensors[name] = tensor
        parameters[name] = path
    outputs = ["output"] if len(results) == 1 else [f"output{i}" for i in range(len(results))]
    for name, tensor in zip(outputs, results):
        tensors[name] = tensor
    return {"tensors": tensors, "parameters": parameters, "outputs": outputs,
            "bytes": sum(t.numel() * t.element_size() for t in tensors.values())}


def _reduce(module, constants: dict, probe: dict, forward_args: list[str], file: str):
    """Constants for a CPU point: the largest size in the inputs' shapes halved, again and
    again, while the model still runs and until its tensors fit CPU_BYTES."""
    current, result = dict(constants), probe
    in_shapes = {d for n in forward_args for d in result["tensors"][n].shape}
    frozen: set[str] = set()
    for _ in range(64):
        if result["bytes"] <= CPU_BYTES:
            return current, result
        candidates = [k for k, v in current.items() if isinstance(v, int) and v >= 2
                      and v in in_shapes and k not in frozen]
        if not candidates:
            return None
        largest = max(candidates, key=current.get)
        trial = dict(current, **{largest: current[largest] // 2})
        try:
            result = _probe(module, trial, forward_args, file)
            current = trial
            in_shapes = {d for n in forward_args for d in result["tensors"][n].shape}
        except ImportFailure:
            frozen.add(largest)
    return None


def _signature_and_tests(points, constants: list[str], forward_args, probe):
    tests = [{"name": name, "params": dict(values), "devices": devices,
              **({"sample": True} if name == "cpu" else {})}
             for name, values, _, devices in points]
    signature = []
    roles = ([(n, "input") for n in forward_args] + [(n, "input") for n in probe["parameters"]]
             + [(n, "output") for n in probe["outputs"]])
    for name, role in roles:
        dims = []
        tensor = probe["tensors"][name]
        for i in range(tensor.dim()):
            values = [p[2]["tensors"][name].shape[i] for p in points]
            fitted = next((c for c in constants if isinstance(points[0][1][c], int)
                           and [p[1][c] for p in points] == values), None)
            if fitted is None and len(set(values)) == 1:
                fitted = values[0]
            if fitted is None:  # a size of its own per point (a convolution's output width)
                fitted = f"{name}_dim{i}"
                for test, value in zip(tests, values):
                    test["params"][fitted] = value
            dims.append(fitted)
        dtype = tensor_dtype(str(tensor.dtype).removeprefix("torch."), "get_inputs", name)
        signature.append({"name": name, "role": role, "dtype": dtype, "shape": dims})
    for c in constants:
        value = points[-1][1][c]
        signature.append({"name": c, "role": "scalar",
                          "dtype": "float32" if isinstance(value, float) else "int32"})
    return signature, tests


HEADER = '''"""The {what} of the KernelBench problem {name}: the file, verbatim, then what the judge calls
(written by `kjudge problem import --from kernelbench`)."""

'''

GENERATED = '''

# -- generated by `kjudge problem import --from kernelbench` --------------------------------
import torch as _torch  # noqa: E402

_CONSTANTS = {constants!r}  # module constants the test points set
_FORWARD = {forward!r}  # forward's arguments, in order
_PARAMETERS = {parameters!r}  # explicit input -> the module's parameter or buffer
_OUTPUTS = {outputs!r}
_MODELS = {{}}
# the global RNG is the process's: the judge draws a round's sets on several threads at once
_GLOBAL_RNG = __import__("threading").Lock()


def _model(values, device):
    """Model with the test point's constants (get_init_inputs reads them), on `device`."""
    key = (tuple(values[c] for c in _CONSTANTS), str(device))
    if key not in _MODELS:
        globals().update({{c: values[c] for c in _CONSTANTS}})
        _MODELS[key] = Model(*get_init_inputs()).to(device)
    return _MODELS[key]


def _forward(values, device):
    model = _model(values, device)
    weights = {{path: values[name] for name, path in _PARAMETERS.items()}}
    result = _torch.func.functional_call(model, weights, tuple(values[n] for n in _FORWARD))
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)
'''

REFERENCE = '''

def make_inputs(params, generator, device):
    """Weights by Model's own initialisation and inputs by get_inputs, the global RNG forked
    and seeded from the judge's generator."""
    seed = int(_torch.randint(0, 2**31 - 1, (1,), generator=generator, device=device))
    devices = [device.index or 0] if device.type == "cuda" else []
    with _GLOBAL_RNG, _torch.random.fork_rng(devices=devices):
        _torch.manual_seed(seed)
        globals().update({c: params[c] for c in _CONSTANTS})
        model = Model(*get_init_inputs())
        inputs = dict(zip(_FORWARD, get_inputs()))
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    inputs.update({name: state[path].detach() for name, path in _PARAMETERS.items()})
    return {name: t.to(device).contiguous() for name, t in inputs.items()}


def reference(**args):
    device = args[_FORWARD[0]].device
    return dict(zip(_OUTPUTS, _forward(args, device)))
'''


def _code(text: str, what: str, name: str, probe: dict, forward: list[str],
          constants: list[str]) -> str:
    return HEADER.format(what=what, name=name) + text.rstrip() + "\n" + GENERATED.format(
        constants=constants, forward=forward, parameters=probe["parameters"],
        outputs=probe["outputs"])


def _baseline(signature: list[dict]) -> str:
    names = [a["name"] for a in signature]
    outputs = [a["name"] for a in signature if a["role"] == "output"]
    return (f"\n\ndef run_kernel({', '.join(names)}):\n"
            f"    values = dict({', '.join(f'{n}={n}' for n in names)})\n"
            f"    for out, value in zip(({', '.join(outputs)},), _forward(values, "
            f"{names[0]}.device)):\n"
            "        out.copy_(value)\n")

