"""Compile steps through the real toolchains: g++, nvcc (compile only), a fake mxcc."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from judge.host.device import DeviceInfo
from judge.languages import UnknownLanguage, get_language, infer_language
from sandbox import SandboxLimits

LIMITS = SandboxLimits(memory_mb=4096, pids=512)
ADD_CU = (Path(__file__).parents[1] / "problems/vector_add/templates/cuda.cu").read_text()


def test_cpp_compiles_and_is_cached(cpu, default_sandbox):
    cpp = get_language("cpp")
    source = 'extern "C" void run_kernel(float* c, int n) { for (int i = 0; i < n; ++i) c[i] = i; }'
    first = cpp.compile(source, cpu, default_sandbox, LIMITS, 60)
    assert first.ok and first.artifact.is_file() and not first.cached
    second = cpp.compile(source, cpu, default_sandbox, LIMITS, 60)
    assert second.cached and second.artifact == first.artifact


def test_corrupted_cache_entry_is_rebuilt(cpu, default_sandbox):
    cpp = get_language("cpp")
    source = 'extern "C" void run_kernel(float* c) { c[0] = 42; }'
    first = cpp.compile(source, cpu, default_sandbox, LIMITS, 60)
    first.artifact.write_bytes(b"tampered")
    again = cpp.compile(source, cpu, default_sandbox, LIMITS, 60)
    assert again.ok and not again.cached and again.artifact.read_bytes() != b"tampered"


def test_cpp_compile_error_keeps_the_log(cpu, default_sandbox):
    result = get_language("cpp").compile("int x = ;", cpu, default_sandbox, LIMITS, 60)
    assert not result.ok and "error" in result.log


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_nvcc_builds_a_shared_library_for_the_device_arch(cpu, default_sandbox):
    h100 = DeviceInfo("cuda", "cuda:0", "H100", 50 * 2**20, arch="sm_90a")
    result = get_language("cuda").compile(ADD_CU, h100, default_sandbox, LIMITS, 120)
    assert result.ok, result.log
    assert result.artifact.read_bytes()[:4] == b"\x7fELF"


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_nvcc_compile_error(cpu, default_sandbox):
    broken = ADD_CU.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + b[i]")
    result = get_language("cuda").compile(broken, cpu, default_sandbox, LIMITS, 120)
    assert not result.ok and "error" in result.log and "submission.cu" in result.log


def test_maca_command_line_with_a_fake_mxcc(tmp_path, cpu, monkeypatch):
    """mxcc does not exist here: a stand-in on PATH records its arguments and builds with g++."""
    from sandbox import get_sandbox

    fake = tmp_path / "bin" / "mxcc"
    fake.parent.mkdir()
    log = tmp_path / "argv.txt"
    fake.write_text(f'#!/bin/sh\necho "$@" > {log}\nout=""; prev=""\n'
                    'for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
                    'test -f kjudge_check.maca || exit 3\necho built > "$out"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("KJUDGE_MXCC", str(fake))
    monkeypatch.setenv("KJUDGE_MACA_ARCH", "xcore1000")
    maca = get_language("maca")
    result = maca.compile('extern "C" void run_kernel() {}', cpu, get_sandbox("process"),
                          LIMITS, 60)
    assert result.ok, result.log
    argv = log.read_text().split()
    assert argv[:2] == ["-x", "maca"] and "--offload-arch=xcore1000" in argv
    assert "-shared" in argv and "-fPIC" in argv
    assert argv[-2:] == ["submission.maca", "kjudge_check.maca"]  # the error check is linked in
    assert maca.runtime_env(cpu)["MACA_PATH"] == os.environ.get("KJUDGE_MACA_PATH", "/opt/maca")


@pytest.mark.parametrize("name,source,expected", [
    ("k.cpp", "", "cpp"), ("k.cu", "", "cuda"), ("k.maca", "", "maca"),
    ("k.py", "import triton\n", "triton"), ("k.py", "import tilelang.language as T\n", "tilelang"),
    ("k.py", "import torch\n", "torch"),
])
def test_language_inference(name, source, expected):
    assert infer_language(Path(name), source).name == expected


def test_unknown_language():
    with pytest.raises(UnknownLanguage):
        infer_language(Path("k.f90"), "")
    with pytest.raises(UnknownLanguage):
        get_language("fortran")


def test_python_sources_without_run_kernel_are_compile_errors(cpu, default_sandbox):
    triton = get_language("triton")
    assert "SyntaxError" in triton.compile("def f(:\n", cpu, default_sandbox, LIMITS, 5).log
    result = triton.compile("import triton\ndef other(): pass\n", cpu, default_sandbox, LIMITS, 5)
    assert not result.ok and "run_kernel is not defined" in result.log


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
@pytest.mark.parametrize("source", sorted(
    [*(Path(__file__).parents[1] / "problems").glob("*/templates/cuda.cu"),
     *(Path(__file__).parents[1] / "problems").glob("*/solutions/AC/*.cu")]),
    ids=lambda p: str(p.relative_to(Path(__file__).parents[1] / "problems")))
def test_every_cuda_template_and_accepted_solution_compiles_for_hopper(source, default_sandbox):
    """For the device's own code (sm_90a proper): a self-test using wgmma compiles only so."""
    h200 = DeviceInfo("cuda", "cuda:0", "H200", 60 * 2**20, arch="sm_90a")
    cuda = get_language("cuda")
    assert cuda.gencode(h200) == "-gencode=arch=compute_90a,code=sm_90a"
    result = cuda.compile(source.read_text(), h200, default_sandbox, LIMITS, 120)
    assert result.ok, result.log


TEMPLATES = Path(__file__).parents[1] / "problems"


def _load(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"template_{path.parts[-3]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TRITON_TYPES = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32", "int8": "*i8",
                "int32": "*i32", "int64": "*i64", "float8_e4m3fn": "*fp8e4nv", "float8_e5m2": "*fp8e5"}


SCRATCH_TYPES = {"ids_ptr": "int32"}


def _triton_signature(kernel, slug: str) -> tuple[dict, dict]:
    """Types from the problem's signature: `<arg>_ptr` gets that argument's dtype, scalars
    theirs; pointers the signature does not name (scratch buffers) are fp32, other values i32
    (name them in SCRATCH_TYPES when they are not)."""
    import yaml

    spec = yaml.safe_load((TEMPLATES / slug / "problem.yaml").read_text())
    dtypes = {a["name"]: a["dtype"] for a in spec["signature"]}
    signature, constexprs = {}, {}
    for param in kernel.params:
        name = param.name
        if param.is_constexpr:  # 64 for block sizes, 2 for counts (TOPK: loops unrolled that often)
            signature[name], constexprs[name] = "constexpr", 2 if name == "TOPK" else 64
        elif name.endswith("_ptr"):
            dtype = dtypes.get(name.removesuffix("_ptr")) or SCRATCH_TYPES.get(name, "float32")
            signature[name] = TRITON_TYPES[dtype]
        else:
            signature[name] = "fp32" if dtypes.get(name, "").startswith("float") else "i32"
    return signature, constexprs


@pytest.mark.parametrize("template", sorted(TEMPLATES.glob("*/templates/triton.py")),
                         ids=lambda p: p.parts[-3])
def test_every_triton_template_compiles_to_ptx_for_hopper(template):
    """Ahead-of-time, without a GPU: the kernels a GPU worker would JIT compile for sm_90."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernels = [v for v in vars(_load(template)).values()
               if isinstance(v, triton.runtime.JITFunction)]
    assert kernels
    for kernel in kernels:
        signature, constexprs = _triton_signature(kernel, template.parts[-3])
        compiled = triton.compile(ASTSource(fn=kernel, signature=signature,
                                            constexprs=constexprs),
                                  target=GPUTarget("cuda", 90, 32))
        assert ".entry" in compiled.asm["ptx"]


def _zero_arguments(problem, test) -> list:
    """run_kernel's arguments for a test point: zero tensors of the declared shapes (CPU)."""
    import torch

    from judge.problem import exprs

    values = []
    for arg in problem.spec.signature:
        if arg.role == "scalar":
            value = exprs.evaluate(arg.value if arg.value is not None else arg.name, test.params)
            values.append(int(value) if arg.dtype.startswith("int") else float(value))
        else:
            shape = [int(exprs.evaluate(d, test.params)) for d in arg.shape]
            values.append(torch.zeros(shape, dtype=getattr(torch, arg.dtype)))
    return values


@pytest.mark.parametrize("template", sorted(TEMPLATES.glob("*/templates/tilelang.py")),
                         ids=lambda p: p.parts[-3])
def test_every_tilelang_template_lowers_to_cuda_for_hopper_on_every_gpu_test_point(
        template, monkeypatch):
    """A GPU judging calls run_kernel on every GPU test point, and TileLang compiles each new
    shape there: each must lower for sm_90a. run_kernel itself runs, with the compile step
    lowering only (nvcc for every shape would take minutes; bench/tilelang_jit_memory.py runs it
    on the smallest)."""
    import tilelang
    from tvm import target as tvm_target

    from judge.problem.schema import load_problem

    target = {"kind": "cuda", "arch": "sm_90a"}
    lowered = []

    def lower_only(func, target):
        with tvm_target.Target(target):
            lowered.append(tilelang.lower(func, target=target).kernel_source)
        return lambda *args: None

    monkeypatch.setenv("KJUDGE_TILELANG_TARGET", json.dumps(target))
    module = _load(template)
    monkeypatch.setattr(module.tilelang, "compile", lower_only)
    problem = load_problem(template.parents[1])
    failures = {}
    for test in problem.tests_for("cuda"):
        try:
            module.run_kernel(*_zero_arguments(problem, test))
        except Exception as exc:  # noqa: BLE001 - collect every failing shape
            failures[test.name] = str(exc).splitlines()[0][:200]
    assert not failures, failures
    assert lowered and all("__global__" in source for source in lowered)


def _c_params(text: str) -> list[tuple[str, str]]:
    """(type, name) of run_kernel's parameters, types normalized (int32_t = int, spaces)."""
    import re

    match = re.search(r'extern\s+"C"\s+void\s+run_kernel\s*\(([^)]*)\)', text)
    assert match, "no extern \"C\" run_kernel"
    params = []
    for part in match.group(1).split(","):
        words = part.replace("*", " * ").split()
        type_ = " ".join(words[:-1]).replace("int32_t", "int").replace(" *", "*")
        params.append((type_, words[-1]))
    return params


@pytest.mark.parametrize("template", sorted(TEMPLATES.glob("*/templates/cuda.cu")),
                         ids=lambda p: p.parts[-3])
def test_every_cuda_template_has_the_problems_abi(template):
    """The templates cannot run here: at least their entry point must match problem.yaml."""
    from judge.languages import get_language
    from judge.problem.schema import load_problem

    problem = load_problem(template.parents[1])
    expected = _c_params(get_language("cuda").declaration(problem.spec.signature))
    assert _c_params(template.read_text()) == expected


def test_a_language_is_one_file(tmp_path, monkeypatch):
    """A module in judge/languages that defines LANGUAGE is all a language needs: the registry
    finds it, and its facts (loader, lexer, C spelling of half types) are on its class."""
    import judge.languages as registry
    from judge.problem.schema import load_problem

    (tmp_path / "fortran_like.py").write_text(
        "from judge.languages.base import NativeLanguage\n\n\n"
        "class FortranLike(NativeLanguage):\n"
        "    name = 'fortran_like'\n    extensions = ('.f90',)\n    devices = ('cpu',)\n"
        "    source_name = 'submission.f90'\n    default_compiler = 'gfortran'\n"
        "    c_types = {'float16': 'half_t'}\n\n\nLANGUAGE = FortranLike()\n")
    monkeypatch.setattr(registry, "__path__", [*registry.__path__, str(tmp_path)])
    found = registry._discover()
    assert found["fortran_like"].loader == "native" and found["fortran_like"].lexer == "cpp"
    assert set(found) - {"fortran_like"} == set(registry.LANGUAGES)
    args = load_problem(TEMPLATES / "vector_add").spec.signature
    assert found["fortran_like"].declaration(args).startswith('extern "C" void run_kernel(const')


def test_every_language_states_its_facts():
    """What the API, the rules and the harness derive from the registry exists for each."""
    from pygments.lexers import get_lexer_by_name

    from judge.host.device import DEVICE_KINDS
    from judge.languages import KERNEL_DECORATORS, LANGUAGES, PYTHON_LANGUAGES
    from judge.problem.schema import LANGUAGES as SCHEMA_LANGUAGES

    assert set(SCHEMA_LANGUAGES) == set(LANGUAGES)
    for language in LANGUAGES.values():
        assert get_lexer_by_name(language.lexer)
        assert language.devices and language.extensions and language.toolchain_version()
        assert set(language.devices) <= set(DEVICE_KINDS) >= set(language.jit_devices)
    assert set(PYTHON_LANGUAGES) == {x.name for x in LANGUAGES.values() if x.loader == "python"}
    assert set(KERNEL_DECORATORS) == {x.packages[0] for x in LANGUAGES.values()
                                      if x.kernel_decorators}


# A Python kernel language dropped into judge/languages as one file, seen by a fresh process.
DROPPED_LANGUAGE = """
from judge.languages.base import PythonKernelLanguage


class MyKern(PythonKernelLanguage):
    name = "mykern"
    packages = ("mykern",)
    infer_rank = 2
    kernel_decorators = ("kernel",)
    starter_imports = "import mykern\\n"


LANGUAGE = MyKern()
"""
DROP_IN_PROBE = """
import importlib.util, json, re, sys
from pathlib import Path

import judge

languages = Path(judge.__file__).parent / "languages"
spec = importlib.util.spec_from_file_location(
    "judge.languages", languages / "__init__.py",
    submodule_search_locations=[str(languages), sys.argv[1]])
registry = importlib.util.module_from_spec(spec)
sys.modules["judge.languages"] = registry
spec.loader.exec_module(registry)

from judge.commands.local import image_packages
from judge.judging.rules import check_rules
from judge.problem.importers import draft
from judge.problem.schema import LANGUAGES, Rule

rule = Rule(id="own", message="write it in mykern", languages=["mykern"], allow_torch=["plumbing"])
inside = ("import mykern\\n@mykern.kernel\\ndef k(x):\\n    return x.exp()\\n"
          "def run_kernel(x, y):\\n    k(x)\\n")
outside = "import mykern\\ndef run_kernel(x, y):\\n    y.copy_(x.exp())\\n"
editor = (Path(judge.__file__).parent / "web/editor/editor.js").read_text()
modes = re.search(r"const LANGUAGES = \\{([^}]*)\\}", editor).group(1)
print(json.dumps({
    "inferred": registry.infer_language(Path("k.py"), "import mykern\\n").name,
    "schema": "mykern" in LANGUAGES,
    "inside_kernel": str(check_rules(inside, "mykern", [rule])),
    "outside_kernel": bool(check_rules(outside, "mykern", [rule])),
    "imported_languages": list(draft.LANGUAGES),
    "starter": draft.starter("mykern", [{"name": "x", "role": "input", "dtype": "float32",
                                         "shape": ["n"]}]),
    "editor_mode": re.search(rf"\\b{registry.get_language('mykern').lexer}\\s*:", modes) is not None,
    "image": image_packages(Path(sys.argv[1])),
}))
"""


def test_a_python_kernel_language_is_one_file(tmp_path):
    """A Python kernel language's facts are on its class (its package, kernel decorators,
    starter imports, editor mode): dropped in as one file, the registry, the rules' allow-list,
    the problem schema, imported problems' templates, the page's editor and the image check
    all take it."""
    import json
    import subprocess
    import sys

    (tmp_path / "mykern.py").write_text(DROPPED_LANGUAGE)
    out = subprocess.run([sys.executable, "-c", DROP_IN_PROBE, str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["inferred"] == "mykern" and seen["schema"]
    assert seen["inside_kernel"] == "None" and seen["outside_kernel"]  # a kernel's calls are its own
    assert "mykern" in seen["imported_languages"]
    assert seen["starter"].startswith("import mykern\n") and "def run_kernel(x):" in seen["starter"]
    assert seen["editor_mode"] and "mykern" in seen["image"]
