"""GPU MODE reference-kernels: a problem folder with `task.yml` (`tests` and `benchmarks`, lists
of `generate_input` keyword arguments), `reference.py` (`generate_input(**kw)`, `ref_kernel(data)`,
`check_implementation`), `task.py` and the shared `../utils.py`; submissions define
`custom_kernel(data)`.

The format declares no signature: the importer runs `generate_input` on the CPU for each of the
`tests` (the format's code, the organizer's to trust) and `ref_kernel` on the meta device, and
reads the tuple's tensors (dtype, shape) and the output. Each dimension becomes an expression over
the integer parameters that fits every probe (`k // 128`); the tuple's names come from
`ref_kernel`'s unpacking of `data`. An output `ref_kernel` writes into (the preallocated `c` of
many problems) stays in its place in the call. The format's code (utils.py, task.py,
reference.py) is copied whole into reference.py and baseline.py (one file each: the baseline
runs in the sandbox as a submission does), its `"cuda"` device strings read from `DEVICE` so
that the same code runs on a CPU test point; its fixed `seed` is replaced by one drawn from the
judge's generator.
"""

from __future__ import annotations

import ast
import inspect
import re
import types
from pathlib import Path

import yaml

from judge.problem.importers.draft import (
    CPU_POINT_BYTES,
    Draft,
    ImportFailure,
    fit_size,
    missing_package,
    packages_of,
    point_name,
    run_module,
    slug_of,
    tensor_dtype,
)

FORMAT = "GPU MODE reference-kernels task"
FORMAT_CHECKER = "format_check.py"  # the checker that runs the format's check_implementation
FORMAT_IMPORTS = re.compile(r"^\s*from\s+(task|utils|reference)\s+import\s+[^\n]*$", re.M)
CUDA_LITERAL = re.compile(r"""(?<![\w.])(["'])cuda(?::0)?\1""")
CUDA_METHOD = re.compile(r"\.cuda\(\)")  # tensor.cuda(): tensor.to(DEVICE)
DEFAULT_TOLERANCE = {"rtol": 1e-5, "atol": 1e-8}  # utils.verbose_allclose's defaults


def discover(folder: Path) -> list[Path]:
    """Problem folders: the folder itself when it holds task.yml, else every one under it."""
    if (folder / "task.yml").is_file() or folder.is_file():
        return [folder]
    return [task.parent for task in folder.rglob("task.yml")]


def _folder(source: Path) -> Path:
    """The problem's folder: `source`, or the folder of a file in it (its task.yml)."""
    return source.parent if source.is_file() else source


def slug_for(source: Path) -> str:
    return slug_of(_folder(source).name)


def convert(source: Path) -> Draft:
    folder = _folder(source)
    task_file = folder / "task.yml"
    if not task_file.is_file():
        raise ImportFailure(str(folder), "", "no task.yml", "point at a problem's folder")
    try:
        task = yaml.safe_load(task_file.read_text())
    except yaml.YAMLError as exc:
        raise ImportFailure("task.yml", "", f"not valid YAML: {exc}") from None
    _refuse_what_does_not_map(task)
    files = _format_files(folder, task)
    code = _format_code(files)
    module = _load(code, folder.name)
    module.kjudge_source, module.kjudge_gpu_only = files["reference.py"].read_text(), ""
    tests = _cases(task, "tests")
    benchmarks = _cases(task, "benchmarks", required=False)
    probes = [_probe(module, tests[0])]
    names = _tuple_names(files["reference.py"], len(probes[0][0]))
    for case in tests[1:]:  # a tuple that changes kind is refused before the next is drawn
        probes.append(_probe(module, case))
        _same_kinds(probes, names)
    params = [k for k, v in tests[0].items() if k != "seed" and isinstance(v, int)]
    structure, probes, names = _flatten(probes, names, tests, params)
    module.kjudge_structure = structure
    signature = _signature(probes, tests, names, params)
    gpu_only = module.kjudge_gpu_only or _cpu_failure(module, tests, probes)
    points = _points(tests, benchmarks, probes, cpu=not gpu_only)
    tolerance, checker, note, todos = _tolerance(files["reference.py"])
    outputs = [a for a in signature if a["role"] == "output"]
    if not gpu_only and not any("cpu" in p["devices"] for p in points):
        todos.append("no test small enough for a CPU point: add one with devices: [cpu]")
    return Draft(
        slug=slug_for(folder), title=folder.name, source_format=FORMAT,
        signature=signature, tests=points, tolerance=tolerance, checker=checker,
        tolerance_note=note, reference=_reference(code, module, signature, names),
        baseline=_baseline(code, module, signature, names),
        description=str(task.get("description", "")), todos=todos,
        notes=[f"`tests` ({len(tests)}) are untimed GPU points, `benchmarks` "
               f"({len(benchmarks)}) the timed ones; the format's `seed` is replaced by one "
               "from the judge's secret seed.",
               "A submission's `custom_kernel(data)` becomes run_kernel over the tuple's "
               f"tensors, then the sizes; it writes {', '.join(a['name'] for a in outputs)} in "
               "place. Inputs arrive contiguous (row-major), whatever views the format made."],
        sources={name: path for name, path in files.items()} | {"task.yml": task_file},
        files={FORMAT_CHECKER: FORMAT_CHECK} if checker == FORMAT_CHECKER else {},
        packages=packages_of(code),
        gpu_only=gpu_only)


def _refuse_what_does_not_map(task: dict) -> None:
    if task.get("lang", "py") != "py":
        raise ImportFailure("task.yml", "lang", f"{task['lang']!r}: only Python tasks map",
                            "port the task to lang: py")
    if task.get("multi_gpu"):
        raise ImportFailure("task.yml", "multi_gpu", "multi-GPU problems do not map: one "
                            "judging holds one device")
    extra = [f["name"] for f in task.get("files", []) if f.get("source") == "@SUBMISSION@"
             and f.get("name") != "submission.py"]
    if extra:
        raise ImportFailure("task.yml", "files", f"the submission is {extra[0]}, not "
                            "submission.py", "one Python file per submission")


def _format_files(folder: Path, task: dict) -> dict[str, Path]:
    """utils.py, task.py and reference.py, where task.yml's `files` say (utils is ../utils.py)."""
    found = {}
    for entry in task.get("files", []):
        name = entry.get("name")
        if name in ("utils.py", "task.py", "reference.py"):
            path = (folder / entry["source"]).resolve()
            if not path.is_file():
                raise ImportFailure("task.yml", f"files[{name}]", f"{entry['source']} not found",
                                    "import from a checkout of the whole problems folder")
            found[name] = path
    if "task.py" not in found and (folder / "task.py").is_file():
        found["task.py"] = folder / "task.py"
    found.setdefault("reference.py", folder / "reference.py")
    if not found["reference.py"].is_file():
        raise ImportFailure("reference.py", "", "not found")
    return found


FUTURE = re.compile(r"^from __future__ import [^\n]*$", re.M)


def _format_code(files: dict[str, Path]) -> str:
    """The format's modules as one: utils, task, reference, their imports of each other
    removed (and __future__ imports, which must come first, said once), "cuda" read from
    DEVICE."""
    texts = {name: files[name].read_text() for name in ("utils.py", "task.py", "reference.py")
             if name in files}
    futures = sorted({m.group(0) for text in texts.values() for m in FUTURE.finditer(text)})
    parts = [*futures,
             'DEVICE = "cuda"  # the device the format\'s code makes tensors on (set per call)']
    for name, text in texts.items():
        text = FORMAT_IMPORTS.sub("", FUTURE.sub("", text))
        parts.append(f"# ---- {name} (the format's, verbatim but for its imports and device "
                     "strings) ----\n"
                     + CUDA_METHOD.sub(".to(DEVICE)", CUDA_LITERAL.sub("DEVICE", text)).strip())
    return "\n\n\n".join(parts) + "\n"


def _load(code: str, name: str) -> types.ModuleType:
    try:
        module = run_module(f"kjudge_gpumode_{slug_of(name)}", code, f"<{name} reference>")
    except Exception as exc:
        if (missing := missing_package(exc, "reference.py")) is not None:
            raise missing from None
        raise ImportFailure("reference.py", "", f"does not import: {exc!r}") from None
    for fn in ("generate_input", "ref_kernel"):
        if not callable(getattr(module, fn, None)):
            raise ImportFailure("reference.py", fn, "not defined: not the format's interface "
                                "(generate_input, ref_kernel, a submission's custom_kernel); "
                                "a task with an eval.py of its own", "write the folder by hand")
    return module


def _cases(task: dict, key: str, required: bool = True) -> list[dict]:
    cases = task.get(key) or []
    if required and not cases:
        raise ImportFailure("task.yml", key, "no cases", "list generate_input's arguments")
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            raise ImportFailure("task.yml", f"{key}[{i}]", "not a mapping of arguments")
    return cases


def _probe(module: types.ModuleType, case: dict):
    """(the tuple's tensors, the output tensors, which tuple positions are outputs): the
    inputs made on the CPU, the output's shape from ref_kernel on the meta device."""
    import torch

    module.DEVICE = "cpu"
    try:
        data = module.generate_input(**case)
    except Exception as exc:
        raise ImportFailure("reference.py", "generate_input",
                            f"fails on the CPU for {case}: {exc!r}") from None
    module.kjudge_tuple = isinstance(data, (tuple, list))
    data = tuple(data) if module.kjudge_tuple else (data,)
    for i, item in enumerate(data):
        if not (isinstance(item, torch.Tensor) or isinstance(item, dict) and all(
                isinstance(v, (torch.Tensor, *LEAF_VALUES)) for v in item.values())):
            kind = type(item).__name__
            if isinstance(item, (list, tuple)):
                kind += (f" of {len(item)}: run_kernel takes a fixed set of tensors, and a list "
                         "as long as the test says (a group GEMM's groups) does not map")
            raise ImportFailure("reference.py", "generate_input",
                                f"element {i} of its tuple is a {kind}",
                                "give ref_kernel tensors, and dicts of tensors and numbers, or "
                                "write the folder by hand")
    module.DEVICE = "meta"
    meta = tuple(_on(x, "meta") for x in data)
    try:
        result = module.ref_kernel(meta if module.kjudge_tuple else meta[0])
    except Exception:  # an operator without a meta kernel: run it for real
        module.DEVICE = "cpu"
        meta = tuple(_on(x, "cpu") for x in data)
        try:
            result = module.ref_kernel(meta if module.kjudge_tuple else meta[0])
        except Exception as exc:
            returned = _returned_positions(module.kjudge_source)
            if returned is None:
                raise ImportFailure("reference.py", "ref_kernel",
                                    f"fails on the CPU for {case}: {exc!r}",
                                    "return what it writes in place, or make it run on a "
                                    "CPU") from None
            module.kjudge_gpu_only = _cpu_failed(exc)
            return data, tuple(data[i] for i in returned), list(returned)
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    in_place = [next((i for i, t in enumerate(meta) if t is r), None) for r in result]
    return data, result, in_place


LEAF_VALUES = (int, float, bool, str, type(None))  # a dict's values besides tensors


def _on(item, device: str):
    """A copy of a tuple element on `device` (a dict's tensors too)."""
    if isinstance(item, dict):
        return {k: _on(v, device) for k, v in item.items()}
    if not hasattr(item, "clone"):
        return item  # a number or a string
    return item.to(device) if device == "meta" else item.clone()


def _flatten(probes, names: list[str], cases: list[dict], params: list[str]):
    """The tuple as arguments: (the structure to build it again, probes whose data is the
    tensors alone, the tensors' names). A dict's tensors are arguments of their own
    (weights_norm_weight for weights["norm.weight"]), its numbers expressions over the sizes
    (config["dim"]: dim), its other values constants; its keys must be the same in every
    test (`_same_kinds`, checked as the probes are drawn)."""
    import torch

    structure, leaves = [], []
    for i, name in enumerate(names):
        items = [probe[0][i] for probe in probes]
        if isinstance(items[0], torch.Tensor):
            structure.append(("t", name))
            leaves.append(name)
            continue
        spec = []
        for key in items[0]:
            values = [x[key] for x in items]
            if all(isinstance(v, torch.Tensor) for v in values):
                leaf = slug_of(f"{name}_{key}")
                spec.append((key, "t", leaf))
                leaves.append(leaf)
            elif all(type(v) is int for v in values) and (
                    fitted := fit_size(values, cases, params)) is not None:
                spec.append((key, "e", str(fitted)))
            elif all(v == values[0] and type(v) is type(values[0]) for v in values):
                spec.append((key, "v", values[0]))
            else:
                raise ImportFailure("reference.py", f"generate_input: {name}[{key!r}]",
                                    f"{values} over the tests: neither a tensor, an expression "
                                    f"of {', '.join(params)}, nor one value",
                                    "write the folder by hand")
        structure.append(("d", spec))
    flat = []
    for data, result, in_place in probes:
        tensors = []
        for (kind, spec), item in zip(structure, data):
            tensors += [item] if kind == "t" else [item[k] for k, how, _ in spec if how == "t"]
        position = {i: leaves.index(spec) for i, (kind, spec) in enumerate(structure)
                    if kind == "t"}
        flat.append((tuple(tensors), result,
                     [position.get(i) if i is not None else None for i in in_place]))
    return structure, flat, leaves


def _same_kinds(probes, names: list[str]) -> None:
    """Each element of the tuple is a tensor in every test, or a dict with the same keys."""
    import torch

    if len({len(probe[0]) for probe in probes}) > 1:
        raise ImportFailure("reference.py", "generate_input", "returns tuples of other lengths "
                            "for other tests", "write the folder by hand")
    for i, name in enumerate(names):
        kinds = {"a tensor" if isinstance(x, torch.Tensor) else tuple(x)
                 for x in (probe[0][i] for probe in probes)}
        if len(kinds) > 1:
            raise ImportFailure("reference.py", "generate_input",
                                f"element {i} ({name}) is not the same kind of value in every "
                                "test (a dict's keys change with the sizes)",
                                "write the folder by hand")


def _cpu_failure(module: types.ModuleType, tests: list[dict], probes) -> str:
    """Why ref_kernel cannot run on the CPU at the smallest test ('' when it can): the meta
    device has kernels (torch._scaled_mm's) that the CPU lacks."""
    sizes = [sum(t.numel() * t.element_size() for t in probe[0]) for probe in probes]
    case = tests[min(range(len(tests)), key=sizes.__getitem__)]
    if min(sizes) > CPU_POINT_BYTES:
        return ""  # no CPU point anyway
    module.DEVICE = "cpu"
    try:
        data = module.generate_input(**case)
        module.ref_kernel(data)
    except Exception as exc:  # noqa: BLE001 - the format's code
        return _cpu_failed(exc)
    return ""


def _cpu_failed(exc: Exception) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:120]
    return f"ref_kernel fails on a CPU: {type(exc).__name__}: {first}"


def _returned_positions(reference: str) -> tuple[int, ...] | None:
    """The positions in `data` of what ref_kernel returns, read from its code where it returns
    names it unpacked from `data` (`a, b, c = data ... return c`): outputs written in place,
    whose shapes generate_input shows without running ref_kernel. None otherwise."""
    for node in ast.walk(ast.parse(reference)):
        if not (isinstance(node, ast.FunctionDef) and node.name == "ref_kernel"
                and node.args.args):
            continue
        unpacked = _unpacked(node)
        returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value]
        if unpacked is None or len(returns) != 1:
            return None
        names = returns[0].elts if isinstance(returns[0], ast.Tuple) else [returns[0]]
        if all(isinstance(n, ast.Name) and n.id in unpacked for n in names):
            return tuple(unpacked.index(n.id) for n in names)
    return None


def _unpacked(function: ast.FunctionDef) -> list[str] | None:
    """The names `a, b, c = data` gives, in order (`_` included), if ref_kernel unpacks so."""
    param = function.args.args[0].arg
    for stmt in function.body:
        if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name)
                and stmt.value.id == param and isinstance(stmt.targets[0], ast.Tuple)):
            return [e.id if isinstance(e, ast.Name) else "" for e in stmt.targets[0].elts]
    return None


def _tuple_names(reference: Path, count: int) -> list[str]:
    """The names ref_kernel unpacks `data` into (`a, b, c = data`; an `_` by its position),
    else x0, x1, ..."""
    for node in ast.walk(ast.parse(reference.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == "ref_kernel" and node.args.args:
            names = _unpacked(node)
            if names is not None and len(names) == count:
                return [n if n and n != "_" and names.count(n) == 1 else f"x{i}"
                        for i, n in enumerate(names)]
    return [f"x{i}" for i in range(count)] if count > 1 else ["x"]


def _signature(probes, tests, names, params) -> list[dict]:
    data0, result0, in_place0 = probes[0]
    cases = [{k: v for k, v in t.items()} for t in tests]
    signature = []

    def arg(name: str, role: str, position: int, pick) -> dict:
        tensor = pick(probes[0])[position]
        dtype = tensor_dtype(str(tensor.dtype).removeprefix("torch."), "reference.py",
                             f"generate_input: {name}")
        shape = []
        for dim in range(tensor.dim()):
            values = [pick(probe)[position].shape[dim] for probe in probes]
            fitted = fit_size(values, cases, params)
            if fitted is None:
                raise ImportFailure("reference.py", f"generate_input: {name}.shape[{dim}]",
                                    f"{values} over the tests fit no expression of "
                                    f"{', '.join(params)}", "write the folder by hand")
            shape.append(fitted)
        return {"name": name, "role": role, "dtype": dtype, "shape": shape}

    outputs_in_place = {i for i in in_place0 if i is not None}
    for i, name in enumerate(names):
        role = "output" if i in outputs_in_place else "input"
        signature.append(arg(name, role, i, lambda probe: probe[0]))
    for j, position in enumerate(in_place0):
        if position is None:
            name = "output" if len(result0) == 1 else f"output{j}"
            signature.append(arg(name, "output", j, lambda probe: probe[1]))
    taken = {a["name"] for a in signature}
    for p in params:
        if p in taken:
            raise ImportFailure("task.yml", f"tests: {p}", "a parameter named like a tensor")
        signature.append({"name": p, "role": "scalar",
                          "dtype": "int32" if max(c[p] for c in cases) < 2**31 else "int64"})
    return signature


def _points(tests: list[dict], benchmarks: list[dict], probes, cpu: bool = True) -> list[dict]:
    """A CPU sample point (the smallest test, if small and `cpu`), the tests as untimed GPU
    points, the benchmarks as timed ones; without a CPU point the smallest test is the
    sample."""
    taken: set[str] = set()
    points = []

    def params(case: dict) -> dict:
        return {k: v for k, v in case.items() if k != "seed"}

    sizes = [sum(t.numel() * t.element_size() for t in probe[0]) for probe in probes]
    smallest = min(range(len(tests)), key=sizes.__getitem__)
    if cpu and sizes[smallest] <= CPU_POINT_BYTES:
        points.append({"name": point_name({"cpu": "", **params(tests[smallest])}, taken),
                       "params": params(tests[smallest]), "sample": True, "devices": ["cpu"]})
    sampled = bool(points)
    for i, case in enumerate(tests):
        points.append({"name": point_name(params(case), taken), "params": params(case),
                       "timed": False, "devices": ["cuda"],
                       **({"sample": True} if not sampled and i == smallest else {})})
    for case in benchmarks:
        points.append({"name": point_name(params(case), taken), "params": params(case),
                       "devices": ["cuda"]})
    return points


def _tolerance(reference: Path):
    """check_implementation = make_match_reference(ref_kernel, rtol=, atol=) maps to allclose
    (utils.verbose_allclose: |out - ref| <= atol + rtol·|ref|, NaN and Inf where the reference
    has them); a check of its own that compares with verbose_allequal to `exact`; any other is
    a KJUDGE-TODO."""
    tree = ast.parse(reference.read_text())
    tolerance = dict(DEFAULT_TOLERANCE, matched_ratio=1.0)
    allclose_note = ("As the format's `make_match_reference` checks (utils.verbose_allclose): "
                     "|out - ref| <= atol + rtol·|ref| on every element, NaN and Inf only where "
                     "the reference has them (checker `allclose`, matched_ratio 1.0).")
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "check_implementation" for t in node.targets):
            call = node.value
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id == "make_match_reference"):
                for kw in call.keywords:
                    if kw.arg in ("rtol", "atol"):
                        tolerance[kw.arg] = float(ast.literal_eval(kw.value))
                note = allclose_note + f" rtol = {tolerance['rtol']:g}, atol = {tolerance['atol']:g}."
                return tolerance, "allclose", note, []
        if isinstance(node, ast.FunctionDef) and node.name == "check_implementation":
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if "verbose_allequal" in names and "verbose_allclose" not in names:
                return (dict(tolerance, rtol=0.0, atol=0.0), "exact",
                        "As the format's check_implementation (verbose_allequal): every element "
                        "equal (checker `exact`).", [])
        if isinstance(node, ast.FunctionDef) and node.name == "check_implementation":
            found = _allclose_only(node)
            if found is not None:
                tolerance.update(found)
                return (tolerance, "allclose", allclose_note.replace(
                    "`make_match_reference` checks", "check_implementation checks (allclose "
                    "calls alone)") + f" rtol = {found['rtol']:g}, atol = {found['atol']:g}.", [])
    return (tolerance, FORMAT_CHECKER,
            "As the format's own check_implementation, run by the judge (its process, not the "
            f"contestant's) on each checked call with the call's inputs (checker "
            f"`{FORMAT_CHECKER}`): a call passes or fails whole.", [])


ALLCLOSE_CALLS = {"verbose_allclose", "allclose"}
HARMLESS_CALLS = {"ref_kernel", "float", "append", "join", "str", "len", "tuple", "list", "zip",
                  "enumerate", "range", "format", "isinstance", "any", "all"}


def _allclose_only(function: ast.FunctionDef) -> dict | None:
    """{rtol, atol} when check_implementation only compares with ref_kernel's outputs by
    allclose calls, all with the same literal tolerances (a loop over outputs, messages);
    None when it checks anything else (a property, a shape, its own tolerance)."""
    found = set()
    for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(
            call.func, "id", "")
        if name in ALLCLOSE_CALLS:
            kw = {k.arg: k.value for k in call.keywords}
            try:
                found.add((float(ast.literal_eval(kw["rtol"])), float(ast.literal_eval(kw["atol"]))))
            except (KeyError, ValueError):
                return None
        elif name not in HARMLESS_CALLS:
            return None
    if len(found) != 1:
        return None
    rtol, atol = found.pop()
    return {"rtol": rtol, "atol": atol}


GENERATED = '''

# -- generated by `kjudge problem import --from gpumode` ------------------------------------
_NAMES = {names!r}  # the tuple's tensors, in order (a dict's by name_key)
# per element of the tuple: ("t", argument) or ("d", [(key, "t" argument | "e" expression over
# the sizes | "v" value)])
_STRUCTURE = {structure!r}
_OUTPUTS = {outputs!r}  # name -> (dtype, shape expressions over the sizes)
_IN_PLACE = {in_place!r}  # outputs that are elements of the tuple
_SIZES = {sizes!r}
_TUPLE = {is_tuple!r}  # whether generate_input returns a tuple (else one tensor)
_SEEDED = {seeded!r}  # whether generate_input takes `seed`
# the global RNG is the process's: the judge draws a round's sets on several threads at once
_GLOBAL_RNG = __import__("threading").Lock()


def _flat(data):
    """The tuple's tensors by argument name."""
    found = {{}}
    for (kind, spec), item in zip(_STRUCTURE, data):
        if kind == "t":
            found[spec] = item
        else:
            found.update({{leaf: item[key] for key, how, leaf in spec if how == "t"}})
    return found


def _rebuild(args, allocate):
    """The tuple ref_kernel takes, from run_kernel's arguments; in-place outputs freshly
    allocated where `allocate`, else the arguments themselves."""
    sizes = {{k: args[k] for k in _SIZES}}
    data = []
    for kind, spec in _STRUCTURE:
        if kind == "t":
            data.append(_allocate(spec, sizes) if allocate and spec in _IN_PLACE else args[spec])
        else:
            data.append({{key: args[what] if how == "t" else eval(what, {{"__builtins__": {{}}}}, sizes)
                         if how == "e" else what for key, how, what in spec}})
    return tuple(data) if _TUPLE else data[0]
'''

REFERENCE = '''

def make_inputs(params, generator, device):
    """generate_input with a seed from the judge's generator (the task's fixed seeds are not
    used), on `device`, the global RNGs forked and seeded from it too."""
    global DEVICE
    DEVICE = device.type
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator, device=device))
    devices = [device.index or 0] if device.type == "cuda" else []
    with _GLOBAL_RNG, torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        with _Zeroed():
            data = generate_input(**params, **({"seed": seed} if _SEEDED else {}))
    data = tuple(data) if _TUPLE else (data,)
    return {name: t.contiguous() for name, t in _flat(data).items() if name not in _IN_PLACE}


class _Zeroed(torch.overrides.TorchFunctionMode):
    """generate_input's uninitialised tensors (torch.empty: pmpp_v2's unused `c`) made zeros:
    memory left as it was is an input no second draw reproduces, and one that can leak."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.empty:
            return torch.zeros(*args, **kwargs)
        if func is torch.empty_like:
            return torch.zeros_like(*args, **kwargs)
        if func is torch.Tensor.new_empty:
            return args[0].new_zeros(*args[1:], **kwargs)
        return func(*args, **kwargs)


def format_check(inputs, outputs):
    """The format's check_implementation over one call: the tuple generate_input made (fresh
    in-place outputs, as the format's own copy for checking has) and what the run wrote, on the
    inputs' device: (passed, message)."""
    global DEVICE
    device = next(v for v in inputs.values() if isinstance(v, torch.Tensor)).device
    DEVICE = device.type
    output = tuple(outputs[n].to(device) for n in _OUTPUTS)
    verdict = check_implementation(_rebuild(inputs, allocate=True),
                                   output if len(output) > 1 else output[0])
    if isinstance(verdict, tuple):  # (good, message)
        return bool(verdict[0]), str(verdict[1])
    return not verdict, str(verdict)  # the older form: the reasons it failed, empty if none


def _allocate(name, args):
    dtype, shape = _OUTPUTS[name]
    sizes = [d if isinstance(d, int) else eval(d, {"__builtins__": {}}, args) for d in shape]
    return torch.zeros(sizes, dtype=getattr(torch, dtype), device=DEVICE)


def reference(**args):
    global DEVICE
    DEVICE = next(v for v in args.values() if isinstance(v, torch.Tensor)).device.type
    result = ref_kernel(_rebuild(args, allocate=True))
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    return dict(zip(_OUTPUTS, result))
'''

BASELINE = '''

def run_kernel({params}):
    global DEVICE
    DEVICE = {first}.device.type
    result = ref_kernel(_rebuild(dict({args}), allocate=False))
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    for out, value in zip(({outputs},), result):
        if value is not out:
            out.copy_(value)
'''


FORMAT_CHECK = '''"""The GPU MODE task's own check_implementation as this problem's checker: each checked call
whole, with its inputs (reference.py's format_check; written by `kjudge problem import --from
gpumode`). Trusted: it runs in the judge's process, never in the contestant's."""

import importlib.util
from pathlib import Path

from checkers import CheckReport

_FILE = Path(__file__).with_name("reference.py")
_SPEC = importlib.util.spec_from_file_location(f"kjudge_format_check_{_FILE.parent.name}", _FILE)
_REFERENCE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_REFERENCE)


def check_call(outputs, expected, inputs, *, rtol, atol, matched_ratio):
    total = sum(t.numel() for t in expected.values())
    try:
        passed, message = _REFERENCE.format_check(inputs, outputs)
    except Exception as exc:  # noqa: BLE001 - the format's check raising on a malformed answer
        passed, message = False, f"the format's check_implementation raised {exc!r}"
    return CheckReport(passed, matched_ratio=1.0 if passed else 0.0, total=total,
                       mismatches=0 if passed else total,
                       message="" if passed else f"check_implementation: {message}")
'''


def _generated(module, signature: list[dict], names: list[str]) -> str:
    outputs = {a["name"]: (a["dtype"], a["shape"]) for a in signature if a["role"] == "output"}
    in_place = [n for n in names if n in outputs]
    sizes = [a["name"] for a in signature if a["role"] == "scalar"]
    seeded = "seed" in inspect.signature(module.generate_input).parameters
    return GENERATED.format(names=names, outputs=outputs, in_place=in_place, sizes=sizes,
                            is_tuple=module.kjudge_tuple, seeded=seeded,
                            structure=module.kjudge_structure)


def _header(what: str) -> str:
    return (f'"""{what}: the GPU MODE task\'s own code (utils.py, task.py, reference.py), then '
            'what the judge\ncalls (written by `kjudge problem import --from gpumode`)."""\n\n'
            "import torch\n\n")


def _reference(code: str, module, signature: list[dict], names: list[str]) -> str:
    return _header("The reference") + code + _generated(module, signature, names) + REFERENCE


def _baseline(code: str, module, signature: list[dict], names: list[str]) -> str:
    outputs = [a["name"] for a in signature if a["role"] == "output"]
    return _header("The baseline") + code + _generated(module, signature, names) + BASELINE.format(
        params=", ".join(a["name"] for a in signature), first=names[0],
        args=", ".join(f"{a['name']}={a['name']}" for a in signature),
        outputs=", ".join(outputs))

