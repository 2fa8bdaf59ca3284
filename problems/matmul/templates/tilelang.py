import json
import os

import tilelang
import tilelang.language as T

_target = os.environ.get("KJUDGE_TILELANG_TARGET", "cuda")  # "c" when judged on the CPU
TARGET = json.loads(_target) if _target.startswith("{") else _target  # {"kind": "cuda", "arch": ...}
_kernels = {}


def make_matmul(m, n, k, bm=128, bn=128, bk=32):
    @T.prim_func
    def matmul(A: T.Tensor((m, k), "float32"), B: T.Tensor((k, n), "float32"),
               C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            a_s = T.alloc_shared((bm, bk), "float32")
            b_s = T.alloc_shared((bk, bn), "float32")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], a_s)
                T.copy(B[ko * bk, bx * bn], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, C[by * bm, bx * bn])

    return matmul


def run_kernel(a, b, c, m, n, k):
    if (m, n, k) not in _kernels:
        _kernels[(m, n, k)] = tilelang.compile(make_matmul(m, n, k), target=TARGET)
    _kernels[(m, n, k)](a, b, c)
