import json
import os

import tilelang
import tilelang.language as T

_target = os.environ.get("KJUDGE_TILELANG_TARGET", "cuda")  # "c" when judged on the CPU
TARGET = json.loads(_target) if _target.startswith("{") else _target  # {"kind": "cuda", "arch": ...}
BLOCK = 256
_kernels = {}


def make_add(n):
    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"),
            C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                idx = bx * BLOCK + i
                if idx < n:
                    C[idx] = A[idx] + B[idx]

    return add


def run_kernel(a, b, c, n):
    if n not in _kernels:  # compile once per shape
        _kernels[n] = tilelang.compile(make_add(n), target=TARGET)
    _kernels[n](a, b, c)
