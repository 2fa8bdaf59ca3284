"""FlashInfer-Bench: a definition (JSON: `axes`, `inputs`, `outputs`, a PyTorch `reference`
defining `run`) and its workloads (JSONL, one per line: the var axes' values and each input's
kind).

Const axes become numbers in the shapes; var axes become test point parameters and int scalar
arguments after the outputs; `shape: null` inputs become scalar arguments whose values the
workloads give. Inputs are drawn as FlashInfer-Bench draws `random` ones (normal floats, fp8
clamped to [-2, 2], integers in [-1024, 1024)), from the judge's generator. Checked with
`either` (an element fails only outside both atol and rtol, FlashInfer's rule), 1e-2 each, all
elements (0.95 for MoE), as FlashInfer-Bench's defaults.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from judge.problem import exprs
from judge.problem.importers.draft import (
    CPU_POINT_BYTES,
    Draft,
    ImportFailure,
    point_name,
    scalar_dtype,
    slug_of,
    tensor_dtype,
)

FORMAT = "FlashInfer-Bench definition"
DTYPE_NAMES = {"float4_e2m1": "float4_e2m1fn_x2"}  # FlashInfer's name -> torch's
RATIO_BY_OP = {"moe": 0.95}  # bench/eval_config.yaml; default 1.0
RATIO_BY_NAME = {"moe_fp8_block_scale": 0.95}  # its LowBitEvaluator
CHECKED_OTHERWISE = {"sampling": "checked by a distribution test over many trials (TVD), not "
                                 "element by element", "dsa_": "checked by a special evaluator"}


def workloads_file(definition: Path, name: str) -> Path | None:
    """The workloads beside the definition (`NAME.jsonl`) or in a trace set's workloads/."""
    candidates = [definition.with_suffix(".jsonl")]
    for root in (definition.parent, *definition.parents[:3]):
        candidates += sorted((root / "workloads").rglob(f"{name}.jsonl"))
    return next((p for p in candidates if p.is_file()), None)


def discover(folder: Path) -> list[Path]:
    """Definitions: the file itself, else every .json under the folder (a trace set's
    definitions/), solutions and workloads left out."""
    if folder.is_file():
        return [folder]
    return [p for p in folder.rglob("*.json")
            if not {"solutions", "workloads", "traces"} & set(p.relative_to(folder).parts)]


def slug_for(source: Path) -> str:
    """The definition's name (its file's stem where it cannot be read: convert says why)."""
    try:
        found = json.loads(source.read_text()).get("name")
    except (OSError, ValueError, AttributeError):
        found = None
    return slug_of(found if isinstance(found, str) else source.stem)


def _definition(source: Path) -> dict:
    """The definition a file holds, refused when it is none or one this judge cannot check."""
    file = source.name
    try:
        definition = json.loads(source.read_text())
    except (OSError, ValueError) as exc:
        raise ImportFailure(file, "", f"not a JSON definition: {exc}") from None
    if "sources" in definition and "spec" in definition:
        raise ImportFailure(file, "sources", "a FlashInfer-Bench solution, not a definition: "
                            "its files are one contestant's submission (here a submission is "
                            "one file)", "import the definition it solves")
    for key in ("name", "axes", "inputs", "outputs", "reference"):
        if key not in definition:
            raise ImportFailure(file, key, "missing", "a FlashInfer-Bench definition has it")
    name, op_type = definition["name"], definition.get("op_type", "")
    for prefix, why in CHECKED_OTHERWISE.items():
        if op_type == prefix or name.startswith(prefix):
            raise ImportFailure(file, "op_type", f"{op_type or name}: {why}",
                                "write a checker for it and the folder by hand")
    return definition


def convert(source: Path) -> Draft:
    file = source.name
    definition = _definition(source)
    name = definition["name"]
    op_type = definition.get("op_type", "")
    axes = definition["axes"]
    const = {k: v["value"] for k, v in axes.items() if v.get("type") == "const"}
    var = [k for k, v in axes.items() if v.get("type") == "var"]
    found = workloads_file(source, name)
    if found is None:
        raise ImportFailure(file, "", f"no workloads found for {name}",
                            f"put {name}.jsonl beside the definition or under workloads/")
    points, fixed = _points(found, name, var, definition)
    signature, tensors = _signature(definition, const, var, points, file)
    tests = _tests(points, tensors)
    ratio = RATIO_BY_NAME.get(name, RATIO_BY_OP.get(op_type, 1.0))
    notes = [f"{len(points)} distinct workloads of {found.name} are the GPU test points."]
    todos = []
    for input_name in sorted(fixed):
        todos.append(f"the workloads give `{input_name}` as fixed data (safetensors); "
                     "make_inputs draws it at random: write how to draw valid values "
                     "(reference.py), then delete this line")
    if not any("cpu" in t["devices"] for t in tests):
        todos.append("no shape small enough for the CPU: add a test point with devices: [cpu]")
    for constraint in definition.get("constraints", []):
        notes.append(f"The definition's constraint `{constraint}` (checked on every workload "
                     "where it names only axes and scalars).")
    return Draft(
        slug=slug_of(name), title=name, source_format=FORMAT, signature=signature, tests=tests,
        tolerance={"rtol": 1e-2, "atol": 1e-2, "matched_ratio": ratio}, checker="either",
        tolerance_note=(
            "As FlashInfer-Bench checks: an element fails only when it is outside both bounds, "
            "|out - ref| > atol and |out - ref| > rtol·|ref| (checker `either`: "
            f"|out - ref| <= max(atol, rtol·|ref|)), atol = rtol = 1e-2, and {ratio:g} of the "
            "elements must pass. `allclose` would allow atol + rtol·|ref|, up to twice as much. "
            "A NaN or Inf where the reference is finite fails, as there."),
        reference=_reference(definition, tensors, fixed),
        baseline=_baseline(definition, signature),
        description=definition.get("description", ""), notes=notes, todos=todos,
        sources={source.name: source, found.name: found})


def _points(path: Path, name: str, var: list[str], definition: dict):
    """The distinct parameter sets of the workloads (var axes and scalar inputs' values), and
    the inputs some workload gives as fixed data."""
    scalars = [k for k, v in definition["inputs"].items() if v.get("shape") is None]
    points, fixed, seen = [], set(), set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            workload = json.loads(line)["workload"]
        except (ValueError, KeyError, TypeError):
            raise ImportFailure(path.name, where, "not a workload trace line") from None
        if json.loads(line).get("definition", name) != name:
            continue
        params = _workload_params(workload, var, scalars, fixed, path.name, where)
        _check_constraints(definition, params, path.name, where)
        key = tuple(sorted(params.items()))
        if key not in seen:
            seen.add(key)
            points.append(params)
    if not points:
        raise ImportFailure(path.name, "", f"no workload of {name}")
    return points, fixed


def _workload_params(workload: dict, var: list[str], scalars: list[str], fixed: set[str],
                     file: str, where: str) -> dict:
    """One workload's var axes and scalar inputs' values; `fixed` learns the inputs it gives
    as data."""
    params = {}
    for axis in var:
        if axis not in workload.get("axes", {}):
            raise ImportFailure(file, f"{where}: workload.axes.{axis}", "missing")
        params[axis] = int(workload["axes"][axis])
    for input_name, spec in workload.get("inputs", {}).items():
        kind = spec.get("type")
        if input_name in scalars:
            if kind != "scalar":
                raise ImportFailure(file, f"{where}: workload.inputs.{input_name}",
                                    f"a scalar given as {kind!r}",
                                    "give scalars as {\"type\": \"scalar\", \"value\": ...}")
            params[input_name] = spec["value"]
        elif kind == "safetensors":
            fixed.add(input_name)
        elif kind not in ("random", None):
            raise ImportFailure(file, f"{where}: workload.inputs.{input_name}.type",
                                f"unknown input kind {kind!r}")
    return params


def _check_constraints(definition: dict, params: dict, file: str, where: str) -> None:
    env = {**{k: v["value"] for k, v in definition["axes"].items() if "value" in v}, **params}
    for constraint in definition.get("constraints", []):
        try:
            holds = exprs.evaluate(constraint, env)
        except exprs.ExpressionError:
            continue  # names no axis (about data): stated, not checked
        if not holds:
            raise ImportFailure(file, where, f"breaks the definition's constraint {constraint}")


def _dims(shape: list[str], const: dict, var: list[str], file: str, field: str) -> list:
    """A tensor's shape: const axes as sizes, var axes as the params' names."""
    out = []
    for axis in shape:
        if axis in const:
            out.append(int(const[axis]))
        elif axis in var:
            out.append(axis)
        else:
            raise ImportFailure(file, field, f"axis {axis!r} is not declared in axes")
    return out


def _signature(definition: dict, const: dict, var: list[str], points: list[dict], file: str):
    signature, tensors = [], {}
    names = set(definition["inputs"]) | set(definition["outputs"])
    for role, group in (("input", "inputs"), ("output", "outputs")):
        for arg_name, spec in definition[group].items():
            field = f"{group}.{arg_name}"
            dtype = DTYPE_NAMES.get(spec["dtype"], spec["dtype"])
            if spec.get("shape") is None:
                if role == "output":
                    raise ImportFailure(file, field, "a scalar output",
                                        "run_kernel writes tensors: give it shape []")
                signature.append({"name": arg_name, "role": "scalar",
                                  "dtype": scalar_dtype(dtype, file, f"{field}.dtype")})
                continue
            arg = {"name": arg_name, "role": role,
                   "dtype": tensor_dtype(dtype, file, f"{field}.dtype"),
                   "shape": _dims(spec["shape"], const, var, file, f"{field}.shape")}
            signature.append(arg)
            tensors[arg_name] = arg
    for axis in var:
        if axis in names:
            raise ImportFailure(file, f"axes.{axis}", "an axis named like an argument",
                                "rename the axis")
        widest = max(p[axis] for p in points)
        signature.append({"name": axis, "role": "scalar",
                          "dtype": "int32" if widest < 2**31 else "int64"})
    return signature, tensors


def _size(arg: dict, params: dict) -> int:
    return math.prod(int(params[d]) if isinstance(d, str) else d
                     for d in arg["shape"]) * _itemsize(arg["dtype"])


def _itemsize(dtype: str) -> int:
    import torch

    return getattr(torch, dtype).itemsize


def _tests(points: list[dict], tensors: dict) -> list[dict]:
    taken: set[str] = set()
    tests = [{"name": point_name(p, taken), "params": p, "devices": ["cuda"]} for p in points]
    smallest = min(points, key=lambda p: sum(_size(a, p) for a in tensors.values()))
    if sum(_size(a, smallest) for a in tensors.values()) > CPU_POINT_BYTES:
        smallest = {k: (min(v, 8) if isinstance(v, int) else v) for k, v in smallest.items()}
    if sum(_size(a, smallest) for a in tensors.values()) <= CPU_POINT_BYTES:
        name = point_name({"cpu": "", **smallest}, taken)
        tests.insert(0, {"name": name, "params": smallest, "sample": True, "devices": ["cpu"]})
    return tests


GENERATED = '''

# -- generated by `kjudge problem import --from flashinfer` ---------------------------------
# run's arguments in the definition's order; the tensors' dtypes; the outputs in order
_ARGS = {args!r}
_TENSORS = {tensors!r}
_OUTPUTS = {outputs!r}
'''

REFERENCE = '''

def _draw(dtype, shape, generator, device):
    """An input as FlashInfer-Bench draws a `random` one, from the judge's generator."""
    kind = getattr(torch, dtype)
    if dtype in ("float32", "float16", "bfloat16", "float64"):
        return torch.randn(shape, generator=generator, device=device).to(kind)
    if dtype.startswith("float8"):
        return torch.randn(shape, generator=generator, device=device).clamp_(-2, 2).to(kind)
    if dtype == "float4_e2m1fn_x2":  # every byte is two fp4 values
        return torch.randint(0, 256, shape, generator=generator, device=device,
                             dtype=torch.uint8).view(kind)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=generator, device=device).bool()
    low, high = (-128, 128) if dtype == "int8" else (-1024, 1024)
    return torch.randint(low, high, shape, generator=generator, device=device).to(kind)


def make_inputs(params, generator, device):
    inputs = {{}}
    for name, (dtype, shape) in _TENSORS.items():
        sizes = [params[d] if isinstance(d, str) else d for d in shape]
{fixed}        inputs[name] = _draw(dtype, sizes, generator, device)
    return inputs


def reference(**args):
    result = run(*[args[name] for name in _ARGS])
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != len(_OUTPUTS):
        raise ValueError(f"run returned {{len(result)}} values for {{len(_OUTPUTS)}} outputs")
    return {{name: value if isinstance(value, torch.Tensor)
             else torch.tensor(value, dtype=getattr(torch, _OUTPUT_DTYPES[name]))
             for name, value in zip(_OUTPUTS, result)}}
'''


def _generated(definition: dict, tensors: dict) -> str:
    inputs = [k for k in definition["inputs"]]
    return GENERATED.format(
        args=inputs,
        tensors={k: (a["dtype"], a["shape"]) for k, a in tensors.items() if a["role"] == "input"},
        outputs=list(definition["outputs"]))


def _header(definition: dict, what: str) -> str:
    imports = "" if "import torch\n" in definition["reference"] else "import torch\n\n"
    return (f'"""{what} of FlashInfer-Bench definition {definition["name"]}: its `run`, '
            'verbatim, then what the\njudge calls (written by `kjudge problem import`)."""\n\n'
            + imports)


def _reference(definition: dict, tensors: dict, fixed: set[str]) -> str:
    todo = "".join(
        f"        if name == {name!r}:  # KJUDGE-TODO: the workloads give {name} as fixed "
        "data: draw valid values here (then `continue`), or keep the random draw below\n"
        "            pass\n" for name in sorted(fixed))
    output_dtypes = {k: DTYPE_NAMES.get(v["dtype"], v["dtype"])
                     for k, v in definition["outputs"].items()}
    return (_header(definition, "The reference") + definition["reference"].strip() + "\n"
            + _generated(definition, tensors) + f"_OUTPUT_DTYPES = {output_dtypes!r}\n"
            + REFERENCE.format(fixed=todo))


BASELINE = '''

def run_kernel({params}):
    result = run({call})
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    for out, value in zip(({outputs},), result):
        out.copy_(value)
'''


def _baseline(definition: dict, signature: list[dict]) -> str:
    outputs = [a["name"] for a in signature if a["role"] == "output"]
    return (_header(definition, "The baseline") + definition["reference"].strip() + "\n"
            + BASELINE.format(params=", ".join(a["name"] for a in signature),
                              call=", ".join(definition["inputs"]), outputs=", ".join(outputs)))
