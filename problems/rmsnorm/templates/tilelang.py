import json
import os

import tilelang
import tilelang.language as T

_target = os.environ.get("KJUDGE_TILELANG_TARGET", "cuda")  # "c" when judged on the CPU
TARGET = json.loads(_target) if _target.startswith("{") else _target  # {"kind": "cuda", "arch": ...}
_kernels = {}


def make_rmsnorm(rows, hidden, eps, threads=128):
    @T.prim_func
    def rmsnorm(X: T.Tensor((rows, hidden), "float16"), W: T.Tensor((hidden,), "float16"),
                Y: T.Tensor((rows, hidden), "float16")):
        with T.Kernel(rows, threads=threads) as r:
            row = T.alloc_fragment((hidden,), "float32")
            squares = T.alloc_fragment((hidden,), "float32")
            total = T.alloc_fragment((1,), "float32")
            for c in T.Parallel(hidden):
                row[c] = T.Cast("float32", X[r, c])
                squares[c] = row[c] * row[c]
            T.reduce_sum(squares, total, dim=0)
            for c in T.Parallel(hidden):
                Y[r, c] = T.Cast("float16", row[c] / T.sqrt(total[0] / hidden + eps)
                                 * T.Cast("float32", W[c]))

    return rmsnorm


def run_kernel(x, weight, y, rows, hidden, eps):
    key = (rows, hidden, eps)
    if key not in _kernels:
        _kernels[key] = tilelang.compile(make_rmsnorm(rows, hidden, eps), target=TARGET)
    _kernels[key](x, weight, y)
