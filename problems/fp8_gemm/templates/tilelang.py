import json
import os

import tilelang
import tilelang.language as T

_target = os.environ.get("KJUDGE_TILELANG_TARGET", "cuda")  # "c" when judged on the CPU
TARGET = json.loads(_target) if _target.startswith("{") else _target  # {"kind": "cuda", "arch": ...}
_kernels = {}
BLOCK = 128  # the scales' block along k (and along n for b)


def make_fp8_gemm(m, n, k, bm=64, bn=128):
    scale_k = T.ceildiv(k, BLOCK)

    @T.prim_func
    def fp8_gemm(A: T.Tensor((m, k), "float8_e4m3"), B: T.Tensor((n, k), "float8_e4m3"),
                 SA: T.Tensor((m, (k + BLOCK - 1) // BLOCK), "float32"),
                 SB: T.Tensor(((n + BLOCK - 1) // BLOCK, (k + BLOCK - 1) // BLOCK), "float32"),
                 C: T.Tensor((m, n), "bfloat16")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            a_s = T.alloc_shared((bm, BLOCK), "float8_e4m3")
            b_s = T.alloc_shared((bn, BLOCK), "float8_e4m3")
            partial = T.alloc_fragment((bm, bn), "float32")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for kb in T.Pipelined(scale_k, num_stages=2):
                T.copy(A[by * bm, kb * BLOCK], a_s)
                T.copy(B[bx * bn, kb * BLOCK], b_s)
                T.clear(partial)
                T.gemm(a_s, b_s, partial, transpose_B=True)
                for i, j in T.Parallel(bm, bn):
                    row, col = by * bm + i, bx * bn + j
                    if row < m and col < n:
                        acc[i, j] += partial[i, j] * SA[row, kb] * SB[col // BLOCK, kb]
            for i, j in T.Parallel(bm, bn):
                row, col = by * bm + i, bx * bn + j
                if row < m and col < n:
                    C[row, col] = T.Cast("bfloat16", acc[i, j])

    return fp8_gemm


def run_kernel(a, b, a_scale, b_scale, c, m, n, k):
    key = (m, n, k)
    if key not in _kernels:
        _kernels[key] = tilelang.compile(make_fp8_gemm(m, n, k), target=TARGET)
    _kernels[key](a, b, a_scale, b_scale, c)
