import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, m, n, k,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for start in range(0, k, BK):
        rk = start + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * k + rk[None, :],
                    mask=(rm[:, None] < m) & (rk[None, :] < k), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * n + rn[None, :],
                    mask=(rk[:, None] < k) & (rn[None, :] < n), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc,
             mask=(rm[:, None] < m) & (rn[None, :] < n))


def run_kernel(a, b, c, m, n, k):
    BM, BN, BK = 64, 64, 32
    grid = (triton.cdiv(m, BM), triton.cdiv(n, BN))
    matmul_kernel[grid](a, b, c, m, n, k, BM=BM, BN=BN, BK=BK)
