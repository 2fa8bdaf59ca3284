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
import functools
import inspect
import math
import re
import time
import types
from dataclasses import dataclass
from pathlib import Path

from judge.problem.importers.draft import (
    Draft,
    ImportFailure,
    missing_package,
    packages_of,
    run_module,
    slug_of,
    tensor_dtype,
)

FORMAT = "KernelBench problem"
CPU_BYTES = 8 * 2**20  # a CPU point's tensors, all together
# the most a CPU point may hold when nothing smaller keeps the model (the weights of a
# ResNet101, 178 MB, do not shrink with its batch or image)
MODEL_CPU_POINT_BYTES = 256 * 2**20
# A model whose run on the meta device takes longer than this (an LSTM steps through its
# sequence op by op there: 7 s for KernelBench's 35_LSTM, 0.2 s computed on the CPU) is probed on
# the CPU while its tensors are within MODEL_CPU_POINT_BYTES: the sizes only shrink from there.
META_SLOW_S = 1.0
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}  # kernelbench eval.py


def discover(folder: Path) -> list[Path]:
    """Problem files: the file itself, else the folder's .py files (a level's folder)."""
    return [folder] if folder.is_file() else list(folder.glob("*.py"))


def slug_for(source: Path) -> str:
    return slug_of(source.stem)


def convert(source: Path) -> Draft:
    if source.is_dir() or source.suffix != ".py":
        raise ImportFailure(str(source), "", "not a KernelBench problem file (.py)")
    text = source.read_text()
    constants = _constants(text, source.name)
    module = _load(text, source)
    forward_args = _forward_args(module, source.name)
    original = dict(constants.values)
    probe = _probe(module, constants, original, forward_args, source.name)
    reduced = _reduce(module, constants, probe, forward_args, source.name)
    gpu_only = ""
    if reduced[0] is None:  # weights that do not shrink (a VGG's 553 MB)
        gpu_only = (f"its tensors are {reduced[1] / 2**20:.0f} MB at the smallest sizes that "
                    f"keep the model, over the {MODEL_CPU_POINT_BYTES >> 20} MB a CPU point "
                    "may hold")
        reduced = None
    points = _test_points(original, probe, reduced)
    shown = _distinct_probe(module, constants, points[0][1], forward_args, source.name,
                            _on_cpu(probe, points[0][2]))
    points = [(name, values | found["scalars"], found, devices)
              for name, values, found, devices in points]
    signature, tests = _signature_and_tests(points, [*original, *probe["scalars"]],
                                            forward_args, probe, shown)
    dtype = next((a["dtype"] for a in signature if a["role"] == "output"), "float32")
    tol = TOLERANCE.get(dtype, 1e-4)
    atol, eval_mode, notes = tol, False, []
    if reduced is not None:
        runs = _run_on_cpu(module, constants, points[0][1], forward_args, source.name)
        atol, eval_mode, notes = _cpu_run_notes(runs, tol)
    return Draft(
        slug=slug_for(source), title=readable_title(source), source_format=FORMAT,
        signature=signature, tests=tests,
        tolerance={"rtol": tol, "atol": atol, "matched_ratio": 1.0}, checker="allclose",
        tolerance_note=(
            f"As KernelBench checks ({dtype}): |out - ref| <= atol + rtol·|ref|, rtol = {tol:g}, "
            f"atol = {atol:g}, every element (checker `allclose`). KernelBench calls "
            "torch.allclose(ref, new), which scales rtol by the new output; here it scales by "
            "the reference's."),
        reference=_code(text, "reference", source.stem, probe, forward_args, constants,
                        eval_mode) + REFERENCE,
        baseline=_code(text, "baseline", source.stem, probe, forward_args, constants, eval_mode)
        + _baseline(signature),
        description=(inspect.getdoc(module.Model) or ""),
        notes=[f"The module's constants ({', '.join(original)}) are parameters and scalar "
               "arguments; the GPU point keeps the file's values.",
               "ModelNew's parameters and buffers are explicit inputs here: "
               + (", ".join(f"`{n}` ({p})" for n, p in probe["parameters"].items()) or "none")
               + "; they are drawn by Model's own initialisation from the judge's seed, and "
               "get_inputs runs with the global RNG seeded from it (forked: the judge's own "
               "state is untouched).", *notes],
        sources={source.name: source}, packages=packages_of(text), gpu_only=gpu_only)


@dataclass
class FileConstants:
    """The file's top-level numbers, which become test point parameters (a tuple or list of int
    literals, `input_shape = (32768,)`, is numbers of its own: input_shape_0), and the top-level
    assignments that derive from them (`bias_shape = (out_channels, 1, 1)`), run again whenever
    a test point sets the numbers, as importing the file did."""

    values: dict[str, int | float]
    derived: str  # Python source

    def apply(self, namespace: dict, values: dict) -> None:
        namespace.update({k: values[k] for k in self.values})
        exec(compile(self.derived, "<derived constants>", "exec"), namespace)  # noqa: S102


def _test_points(original: dict, probe: dict, reduced: tuple | None) -> list[tuple]:
    """(name, constants, probe, devices) of each test point: the file's own sizes on the GPU
    (and the CPU where they fit it), and the reduced sizes on the CPU where those differ."""
    if reduced is not None and reduced[0] == original:  # the file's own sizes fit a CPU
        return [("full", original, probe, ["cpu", "cuda"])]
    points = [("full", original, probe, ["cuda"])]
    if reduced is not None:
        points.insert(0, ("cpu", reduced[0], reduced[1], ["cpu"]))
    return points


def _cpu_run_notes(runs: dict, tol: float) -> tuple[float, bool, list[str]]:
    """From a run of the model at the CPU point: the absolute tolerance (lowered where the
    outputs are small), whether it runs in eval mode, and the notes that say why."""
    atol, notes = tol, []
    eval_mode = runs["random"]
    if eval_mode:
        notes.append("Model draws random numbers in training mode (dropout): its answers "
                     "cannot be checked, so it runs in eval mode (as at inference).")
    typical = runs["typical"]
    if typical > 0 and atol > typical / 10:
        atol = 10.0 ** math.floor(math.log10(typical / 100))
        notes.append(f"atol is {atol:g}, not KernelBench's {tol:g}: the reference's outputs "
                     f"are about {typical:.2g} (90th percentile of |out| at the CPU point), "
                     "where an answer of zeros would pass the format's tolerance.")
    return atol, eval_mode, notes


def _constants(text: str, file: str) -> FileConstants:
    values: dict[str, int | float] = {}
    derived: list[str] = []
    for node in ast.parse(text).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple)
                and isinstance(node.value, ast.Tuple)
                and len(node.targets[0].elts) == len(node.value.elts)):  # D, H, W = 16, 32, 32
            for target, value in zip(node.targets[0].elts, node.value.elts):
                number = _number(value, file) if isinstance(target, ast.Name) else None
                if number is not None:
                    values[target.id] = number
            continue
        if not isinstance(node, ast.Assign) or not all(isinstance(t, ast.Name)
                                                       for t in node.targets):
            continue
        names = [t.id for t in node.targets]
        number = _number(node.value, file)
        if number is not None:
            values.update(dict.fromkeys(names, number))
        elif isinstance(node.value, (ast.Tuple, ast.List)) and node.value.elts and all(
                isinstance(e, ast.Constant) and type(e.value) is int for e in node.value.elts):
            parts = [f"{names[0]}_{i}" for i in range(len(node.value.elts))]
            values.update(zip(parts, (e.value for e in node.value.elts)))
            shape = "({},)" if isinstance(node.value, ast.Tuple) else "[{}]"
            derived.append(f"{' = '.join(names)} = " + shape.format(", ".join(parts)))
        elif {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} & (
                set(values) | {d.split(" = ")[0] for d in derived}):
            derived.append(" = ".join(names) + " = " + ast.get_source_segment(text, node.value))
    return FileConstants(values, "\n".join(derived))


def _number(node: ast.expr, file: str) -> int | float | None:
    """A plain number (`16`, `4096 * 2`), else None."""
    try:
        value = eval(compile(ast.Expression(node), file, "eval"), {})  # noqa: S307
    except Exception:  # noqa: BLE001 - not a plain number
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _load(text: str, source: Path) -> types.ModuleType:
    try:
        module = run_module(f"kjudge_kernelbench_{slug_of(source.stem)}", text, str(source))
    except Exception as exc:
        if (missing := missing_package(exc, source.name)) is not None:
            raise missing from None
        raise ImportFailure(source.name, "", f"does not import: {exc!r}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ImportFailure(source.name, name, "not defined",
                                "a KernelBench problem defines Model, get_inputs and "
                                "get_init_inputs")
    return module


def _forward_args(module, file: str) -> list[str]:
    """forward's arguments that get_inputs gives (the others keep their defaults: an LSTM's
    h0=None)."""
    import torch

    params = [p for p in inspect.signature(module.Model.forward).parameters.values()
              if p.name != "self"]
    try:
        with torch.device("meta"):
            count = len(module.get_inputs())
    except Exception as exc:
        raise ImportFailure(file, "get_inputs", f"fails on the meta device: {exc!r}") from None
    if count > len(params):
        raise ImportFailure(file, "get_inputs", f"{count} values for forward's {len(params)} "
                            "arguments")
    missing = [p.name for p in params[count:] if p.default is inspect.Parameter.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        raise ImportFailure(file, "get_inputs", f"gives no value for forward's {missing}")
    return [p.name for p in params[:count]]


def _probe(module, constants: FileConstants, values: dict, forward_args: list[str],
           file: str, on_cpu: bool = False) -> dict:
    """The inputs', parameters' and outputs' dtypes and shapes with these constants, on the
    meta device (nothing is computed), or `on_cpu` (see META_SLOW_S); `slow_on_meta` says
    whether the meta device was slow at it."""
    import torch

    try:
        constants.apply(vars(module), values)
    except Exception as exc:
        raise ImportFailure(file, "", f"its constants do not evaluate with {values}: "
                            f"{exc!r}") from None
    model, inputs, result, slow_on_meta = _run_for_shapes(module, values, file, on_cpu)
    if len(inputs) != len(forward_args):
        raise ImportFailure(file, "get_inputs", f"{len(inputs)} values for forward's "
                            f"{len(forward_args)} arguments")
    scalars = {}  # forward's arguments that are numbers: scalar arguments, fixed per point
    for name, value in zip(forward_args, inputs):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            scalars[name] = value
        elif not isinstance(value, torch.Tensor):
            raise ImportFailure(file, "get_inputs", f"{name} is a {type(value).__name__}",
                                "give forward tensors and numbers")
    results = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    tensors = {n: t for n, t in zip(forward_args, inputs) if n not in scalars}
    parameters, buffers = {}, []
    taken = {*forward_args, *values, "output"}
    for path, tensor in [*model.named_parameters(), *model.named_buffers()]:
        name = path.replace(".", "_")
        name = f"{name}_param" if name in taken else name  # a constant of the same name
        tensors[name] = tensor
        parameters[name] = path
    buffers = [n for n, path in parameters.items() if path in dict(model.named_buffers())]
    outputs = ["output"] if len(results) == 1 else [f"output{i}" for i in range(len(results))]
    for name, tensor in zip(outputs, results):
        tensors[name] = tensor
    return {"tensors": tensors, "parameters": parameters, "buffers": buffers,
            "outputs": outputs, "scalars": scalars, "slow_on_meta": slow_on_meta,
            "bytes": sum(t.numel() * t.element_size() for t in tensors.values())}


def _reduce(module, constants: FileConstants, probe: dict, forward_args: list[str],
            file: str):
    """Constants for a CPU point: sizes halved while the model still runs on the meta device,
    until its tensors fit CPU_BYTES: the batch first (to 2), then the largest size found in a
    tensor's shape (to 8, so that channels and spatial sizes keep their structure), alone or
    with the sizes equal to it (a broadcast that needs them equal), keeping every tensor of the
    model, and only where that saves 5 % of the bytes (a ResNet's image halved to 14 x 14
    saves nothing beside its weights and leaves a BatchNorm over two values per channel).
    (None, its bytes) when the smallest found is still over MODEL_CPU_POINT_BYTES."""
    current, result = dict(constants.values), probe
    batch = _batch(current, probe, forward_args)
    frozen: set[str] = set()
    while result["bytes"] > CPU_BYTES:
        sizes = {d for t in result["tensors"].values() for d in t.shape}
        candidates = [k for k, v in current.items() if type(v) is int and k not in frozen
                      and v in sizes and v >= (4 if k == batch else 16)]
        if not candidates:
            break
        knob = batch if batch in candidates else max(candidates, key=current.get)
        tied = [k for k in candidates if current[k] == current[knob]]
        for group in ([knob], tied) if len(tied) > 1 else ([knob],):
            trial = dict(current, **{k: current[k] // 2 for k in group})
            try:
                found = _probe(module, constants, trial, forward_args, file,
                               on_cpu=_on_cpu(probe, result))
            except ImportFailure:
                continue
            if _structure(found) != _structure(probe):  # a branch came or went
                continue
            if knob != batch and found["bytes"] > 0.95 * result["bytes"]:
                continue  # the weights are what is large: keep the sizes that compute on
            result, current = found, trial
            break
        else:
            frozen.add(knob)
    return (current, result) if result["bytes"] <= MODEL_CPU_POINT_BYTES else (
        None, result["bytes"])


def _run_for_shapes(module, values: dict, file: str, on_cpu: bool) -> tuple:
    """Model, inputs and result on the meta device, else on the CPU (`on_cpu`: the CPU first),
    and whether the meta device ran it and was slow at it (META_SLOW_S). A failure on meta
    that is not for want of data (a shape that does not fit) is not tried on the CPU, where it
    fails alike after computing for real what comes before it (7 s of a ConvTranspose3d)."""
    failure: Exception | None = None
    _warm_meta()
    for device in ("cpu", "meta") if on_cpu else ("meta", "cpu"):
        start = time.monotonic()
        try:
            model, inputs, result = _run(module, device)
        except Exception as exc:  # noqa: BLE001 - the format's code: any error is a finding
            failure = exc
            if device == "meta" and not _wants_data(exc):
                break
            continue
        slow = device == "meta" and time.monotonic() - start > META_SLOW_S
        return model, inputs, result, slow
    raise ImportFailure(file, "Model", f"does not run with {values}: {failure!r}")


def _wants_data(exc: Exception) -> bool:
    """Whether a failure on the meta device is for want of the data that a CPU run has:
    Tensor.item(), nonzero(), an operator with no meta kernel, a tensor made on the CPU beside
    meta ones. Torch names the meta device in each, and no shape error does (a message that
    names it for another reason costs only the CPU run that every failure had before)."""
    return isinstance(exc, NotImplementedError) or "meta" in str(exc).lower()


@functools.cache
def _warm_meta() -> None:
    """Pay torch's first-use loading before a meta run is timed against META_SLOW_S: the meta
    kernels written in Python import torch._dynamo on first call (~1.4 s), which judged a model
    that runs in milliseconds on meta slow, and probed it on the CPU at 2-3x the import time,
    depending on which side of 1 s the load fell."""
    import torch
    import torch._dynamo  # noqa: F401 - the load itself is the point

    with torch.device("meta"):
        (torch.ones(2, 1) + torch.ones(1, 2)).sum()


def _on_cpu(first: dict, current: dict) -> bool:
    """Whether to probe sizes below `current`'s on the CPU: the meta device was slow at the
    file's own sizes (`first`), and the tensors are small enough to compute (META_SLOW_S)."""
    return first["slow_on_meta"] and current["bytes"] <= MODEL_CPU_POINT_BYTES


def readable_title(source: Path) -> str:
    """'76_Gemm_Add_ReLU.py' in level2/ -> 'Gemm Add ReLU (KernelBench level 2, #76)'."""
    number, _, name = source.stem.partition("_")
    if not number.isdigit() or not name:
        number, name = "", source.stem
    name = " ".join(name.replace("_", " ").split())
    level = re.fullmatch(r"level(\d+)", source.parent.name)
    where = ", ".join(([f"level {level.group(1)}"] if level else [])
                      + ([f"#{number}"] if number else []))
    return f"{name} (KernelBench{' ' + where if where else ''})"


def _run_on_cpu(module, constants: FileConstants, values: dict, forward_args: list[str],
                file: str) -> dict:
    """The model run for real at a CPU point (small): whether its outputs depend on the RNG
    (two seeds, same weights and inputs) and how large they typically are."""
    import torch

    constants.apply(vars(module), values)
    outputs = []
    try:
        with torch.random.fork_rng(), torch.no_grad():
            torch.manual_seed(0)
            model = module.Model(*module.get_init_inputs())
            inputs = module.get_inputs()
            for seed in (1, 2):
                torch.manual_seed(seed)
                result = model(*inputs)
                outputs.append(result if isinstance(result, (tuple, list)) else (result,))
    except Exception as exc:
        raise ImportFailure(file, "Model", f"fails on the CPU with {values}: {exc!r}") from None
    random = any(not torch.equal(a, b) for a, b in zip(*outputs))
    values_ = torch.cat([t.detach().double().abs().flatten() for t in outputs[0]
                         if t.is_floating_point()] or [torch.zeros(1, dtype=torch.double)])
    sample = values_[torch.randperm(values_.numel())[:100_000]] if values_.numel() else values_
    typical = float(sample.quantile(0.9)) if sample.numel() else 0.0
    return {"random": random, "typical": typical}


def _run(module, device: str):
    """Model, get_inputs' values and forward's result on `device` (meta: shapes alone)."""
    import torch

    with torch.device(device), torch.no_grad(), torch.random.fork_rng():
        model = module.Model(*module.get_init_inputs())
        inputs = list(module.get_inputs())
        return model, inputs, model(*inputs)


def _structure(probe: dict) -> dict[str, tuple]:
    """Each tensor's name, rank and dtype: what a CPU point must keep of the file's model (a
    shortcut convolution exists only while the channels differ)."""
    return {n: (t.dim(), t.dtype) for n, t in probe["tensors"].items()}


def _batch(values: dict, probe: dict, forward_args: list[str]) -> str | None:
    """The constant that sizes the first input's first dimension (batch_size), if one does."""
    first = probe["tensors"][forward_args[0]] if forward_args else None
    if first is None or first.dim() == 0:
        return None
    return next((k for k, v in values.items() if type(v) is int and v == first.shape[0]), None)


def _distinct_probe(module, constants: FileConstants, values: dict, forward_args: list[str],
                    file: str, on_cpu: bool = False) -> tuple[dict, dict] | None:
    """(sizes, tensors) with every size made different from the others (batch_size and
    input_shape_0 are both 32768 in the file, 1024 at the CPU point, and a broadcast may need
    them equal): the model's tensors where it runs so, else get_inputs' alone. Which size makes
    which dimension is then not a guess."""
    import torch

    distinct, seen = {}, set()
    for name, value in values.items():
        if type(value) is int and value >= 2:
            while value in seen:
                value += 1
            seen.add(value)
        distinct[name] = value
    try:
        return distinct, _probe(module, constants, distinct, forward_args, file,
                                on_cpu)["tensors"]
    except ImportFailure:
        pass
    try:
        constants.apply(vars(module), distinct)
        with torch.device("meta"):
            return distinct, dict(zip(forward_args, module.get_inputs()))
    except Exception:  # noqa: BLE001 - the format's code: the points alone decide
        return None


def _signature_and_tests(points, constants: list[str], forward_args, probe,
                         shown: tuple[dict, dict] | None):
    """The signature, each dimension fitted over the test points and the distinct probe: a
    constant that gives it everywhere, else a literal size, else a parameter of each point."""
    tests = [{"name": name, "params": dict(values), "devices": devices,
              **({"sample": True} if "cpu" in devices or len(points) == 1 else {})}
             for name, values, _, devices in points]
    evidence = [(p[1], p[2]["tensors"]) for p in points] + ([shown] if shown else [])
    signature = []
    roles = ([(n, "input") for n in forward_args if n not in probe["scalars"]]
             + [(n, "input") for n in probe["parameters"]]
             + [(n, "output") for n in probe["outputs"]])
    for name, role in roles:
        dims = []
        tensor = probe["tensors"][name]
        for i in range(tensor.dim()):
            seen = [(sizes, found[name].shape[i]) for sizes, found in evidence if name in found]
            fitted = next((c for c in constants if isinstance(points[0][1][c], int)
                           and all(sizes[c] == size for sizes, size in seen)), None)
            if fitted is None and len({size for _, size in seen}) == 1:
                fitted = seen[0][1]
            values = [p[2]["tensors"][name].shape[i] for p in points]
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
_DERIVED = compile({derived!r}, "<derived constants>", "exec")  # what the file derives from them
_FORWARD = {forward!r}  # forward's arguments, in order
_PARAMETERS = {parameters!r}  # explicit input -> the module's parameter or buffer
_EVAL = {eval_mode!r}  # run in eval mode: training mode draws random numbers (dropout)
_BUFFERS = {buffers!r}  # copied for each call: a training-mode module updates them in place
_OUTPUTS = {outputs!r}
_MODELS = {{}}
# the judge draws a round's sets and checks its calls on several threads at once, and what they
# use here is the process's: the global RNG, the file's constants and a point's one Model, whose
# weights functional_call swaps in for a call (two calls at once would mix their weights)
_SHARED = __import__("threading").RLock()


def _model(values, device):
    """Model with the test point's constants (get_init_inputs reads them), on `device`; the
    caller holds _SHARED."""
    key = (tuple(values[c] for c in _CONSTANTS), str(device))
    if key not in _MODELS:
        _configure(values)
        _MODELS[key] = Model(*get_init_inputs()).to(device).train(not _EVAL)
    return _MODELS[key]


def _configure(values):
    """The file's constants as the test point sets them, and what the file derives from them."""
    globals().update({{c: values[c] for c in _CONSTANTS}})
    exec(_DERIVED, globals())


def _forward(values, device):
    weights = {{path: values[name].clone() if name in _BUFFERS else values[name]
               for name, path in _PARAMETERS.items()}}
    with _SHARED:
        result = _torch.func.functional_call(_model(values, device), weights,
                                             tuple(values[n] for n in _FORWARD))
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)
'''

REFERENCE = '''

def make_inputs(params, generator, device):
    """Weights by Model's own initialisation and inputs by get_inputs, the global RNG forked
    and seeded from the judge's generator."""
    seed = int(_torch.randint(0, 2**31 - 1, (1,), generator=generator, device=device))
    devices = [device.index or 0] if device.type == "cuda" else []
    with _SHARED, _torch.random.fork_rng(devices=devices):
        _torch.manual_seed(seed)
        _configure(params)
        model = Model(*get_init_inputs())
        inputs = {n: v for n, v in zip(_FORWARD, get_inputs()) if isinstance(v, _torch.Tensor)}
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    inputs.update({name: state[path].detach() for name, path in _PARAMETERS.items()})
    return {name: t.to(device).contiguous() for name, t in inputs.items()}


def reference(**args):
    device = args[_FORWARD[0]].device
    return dict(zip(_OUTPUTS, _forward(args, device)))
'''


def _code(text: str, what: str, name: str, probe: dict, forward: list[str],
          constants: FileConstants, eval_mode: bool) -> str:
    return HEADER.format(what=what, name=name) + text.rstrip() + "\n" + GENERATED.format(
        constants=list(constants.values), derived=constants.derived, forward=forward,
        parameters=probe["parameters"], buffers=probe["buffers"], outputs=probe["outputs"],
        eval_mode=eval_mode)


def _baseline(signature: list[dict]) -> str:
    names = [a["name"] for a in signature]
    outputs = [a["name"] for a in signature if a["role"] == "output"]
    return (f"\n\ndef run_kernel({', '.join(names)}):\n"
            f"    values = dict({', '.join(f'{n}={n}' for n in names)})\n"
            f"    for out, value in zip(({', '.join(outputs)},), _forward(values, "
            f"{names[0]}.device)):\n"
            "        out.copy_(value)\n")

