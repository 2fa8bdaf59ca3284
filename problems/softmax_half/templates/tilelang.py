import json
import math
import os

import tilelang
import tilelang.language as T

_target = os.environ.get("KJUDGE_TILELANG_TARGET", "cuda")  # "c" when judged on the CPU
TARGET = json.loads(_target) if _target.startswith("{") else _target  # {"kind": "cuda", "arch": ...}
_kernels = {}


def make_softmax(rows, cols, threads=128):
    @T.prim_func
    def softmax(X: T.Tensor((rows, cols), "float16"), Y: T.Tensor((rows, cols), "float16")):
        with T.Kernel(rows, threads=threads) as r:
            row = T.alloc_fragment((cols,), "float32")
            row_max = T.alloc_fragment((1,), "float32")
            row_sum = T.alloc_fragment((1,), "float32")
            for c in T.Parallel(cols):
                row[c] = T.Cast("float32", X[r, c])
            T.reduce_max(row, row_max, dim=0)
            for c in T.Parallel(cols):
                row[c] = T.exp(row[c] - row_max[0])
            T.reduce_sum(row, row_sum, dim=0)
            for c in T.Parallel(cols):
                Y[r, c] = T.Cast("float16", row[c] / row_sum[0])

    return softmax


def run_kernel(x, y, rows, cols):
    key = (rows, cols)
    if key not in _kernels:
        # the threads of a row's block must divide its columns for TileLang's reduce layouts
        threads = math.gcd(cols, 128)
        _kernels[key] = tilelang.compile(make_softmax(rows, cols, threads), target=TARGET)
    _kernels[key](x, y)
