import pytest

from judge.judging.rules import check_rules
from judge.problem import exprs
from judge.problem.schema import Rule

NO_TORCH = Rule(id="no_torch", message="no PyTorch ops", languages=["triton", "cpp"],
                forbid_calls=["torch.add", ".add_"], forbid_imports=["torch.nn.functional"])
NO_ASYNC = Rule(id="no_async", message="asynchronous copy is forbidden", regex=r"cp\.async")


def test_forbidden_call_found_through_an_alias_with_its_line():
    source = "import triton\nimport torch as t\n\ndef run_kernel(a, b, c, n):\n    t.add(a, b, out=c)\n"
    v = check_rules(source, "triton", [NO_TORCH])
    assert v is not None and v.rule == "no_torch" and v.line == 5 and "t.add" in v.text


def test_forbidden_method_and_import():
    assert check_rules("def run_kernel(a, b, c, n):\n    c.add_(a)\n", "triton", [NO_TORCH]).line == 2
    assert check_rules("from torch.nn import functional as F\n", "triton", [NO_TORCH]).line == 1
    assert check_rules("import torch.nn.functional\n", "triton", [NO_TORCH]).line == 1


def test_allowed_calls_and_other_languages_pass():
    assert check_rules("import torch\nx = torch.empty(3)\n", "triton", [NO_TORCH]) is None
    assert check_rules("torch.add(a, b)", "tilelang", [NO_TORCH]) is None  # rule not for tilelang


def test_regex_rule_on_cuda_source():
    source = "__global__ void k() {\n  asm(\"cp.async.ca.shared.global [%0], [%1], 16;\");\n}\n"
    v = check_rules(source, "cuda", [NO_ASYNC])
    assert v.line == 2 and "asynchronous copy" in str(v)


def test_expressions():
    assert exprs.evaluate("3 * 4 * n", {"n": 10}) == 120
    assert exprs.evaluate("100 * min(speedup, 10)", {"speedup": 12.5}) == 1000
    assert exprs.evaluate("ceildiv(n, 256)", {"n": 257}) == 2
    assert exprs.names("log2(speedup) * k + 1") == {"speedup", "k"}


@pytest.mark.parametrize("bad", ["__import__('os')", "n.real", "[1, 2]", "'text'", "lambda: 1", "f(1)"])
def test_expressions_reject_anything_but_arithmetic(bad):
    with pytest.raises(exprs.ExpressionError):
        exprs.evaluate(bad, {"n": 1})


ONLY_PLUMBING = Rule(id="no_torch_softmax", message="the softmax must be your kernel's",
                     languages=["triton", "tilelang"], allow_torch=["plumbing"])
SOFTMAX_BY_TENSOR_METHODS = """
import torch, triton

def run_kernel(x, y, rows, cols):  # AC under the old deny-list [torch.softmax, .softmax, torch.exp]
    m = x.amax(dim=1, keepdim=True)
    e = (x - m).exp()
    y.copy_(e / e.sum(dim=1, keepdim=True))
"""


@pytest.mark.parametrize("source,line", [
    (SOFTMAX_BY_TENSOR_METHODS, 5),
    ("import torch\nimport triton\nf = getattr(torch, 'exp')\n", 3),
    ("import triton\nimport torch.nn.functional as F\ndef run_kernel(x, y):\n    F.softmax(x, -1)\n", 4),
    ("import triton\nfrom torch import special\ndef run_kernel(x, y):\n    special.softmax(x, 1)\n", 4),
    ("import triton\nimport torch\ndef run_kernel(x, y):\n    torch.ops.aten.exp(x)\n", 4),
    ("import triton\ndef jit(f):\n    return f\n@jit\ndef run_kernel(x, y):\n    y.copy_(x.exp())\n", 6),
])
def test_the_allow_list_form_stops_methods_aliases_and_dynamic_access(source, line):
    violation = check_rules(source, "triton", [ONLY_PLUMBING])
    assert violation is not None and violation.line == line, violation


def test_the_allow_list_form_lets_kernels_modules_and_plumbing_through():
    source = """
import json, os
import torch
import tilelang
import tilelang.language as T

TARGET = json.loads(os.environ.get("T", "{}")) if "{" in os.environ.get("T", "") else "c"

def make(rows, cols):
    @T.prim_func
    def kernel(X: T.Tensor((rows, cols), "float32")):
        with T.Kernel(rows, threads=32) as r:
            X[r, 0] = T.rsqrt(T.exp(X[r, 0]))  # the DSL's own calls
    return kernel

def run_kernel(x, y, rows, cols):
    out = torch.empty_like(y).view(rows, cols)
    tilelang.compile(make(rows, cols), target=TARGET)(x.contiguous())
    y.copy_(out.reshape(y.shape))
"""
    assert check_rules(source, "tilelang", [ONLY_PLUMBING]) is None
    allowed_exp = Rule(id="r", message="m", allow_torch=["plumbing", ".exp"])
    assert check_rules("def run_kernel(x, y):\n    y.copy_(x.exp())\n", "torch", [allowed_exp]) \
        is None
