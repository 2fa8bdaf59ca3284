import json
import os

import tilelang
import tilelang.language as T

_target = os.environ.get("KJUDGE_TILELANG_TARGET", "cuda")  # "c" when judged on the CPU
TARGET = json.loads(_target) if _target.startswith("{") else _target  # {"kind": "cuda", "arch": ...}
_kernels = {}


def make_int8_gemm(m, n, k, bm=128, bn=128, bk=64):
    @T.prim_func
    def int8_gemm(A: T.Tensor((m, k), "int8"), B: T.Tensor((n, k), "int8"),
                  SA: T.Tensor((m,), "float32"), SB: T.Tensor((n,), "float32"),
                  C: T.Tensor((m, n), "float16")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            a_s = T.alloc_shared((bm, bk), "int8")
            b_s = T.alloc_shared((bn, bk), "int8")
            acc = T.alloc_fragment((bm, bn), "int32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=3):
                T.copy(A[by * bm, ko * bk], a_s)
                T.copy(B[bx * bn, ko * bk], b_s)
                T.gemm(a_s, b_s, acc, transpose_B=True)
            for i, j in T.Parallel(bm, bn):
                row, col = by * bm + i, bx * bn + j
                if row < m and col < n:
                    C[row, col] = T.Cast("float16", T.Cast("float32", acc[i, j]) * SA[row] * SB[col])

    return int8_gemm


def run_kernel(a, b, scale_a, scale_b, c, m, n, k):
    key = (m, n, k)
    if key not in _kernels:
        _kernels[key] = tilelang.compile(make_int8_gemm(m, n, k), target=TARGET)
    _kernels[key](a, b, scale_a, scale_b, c)
