import triton
import triton.language as tl


# Applies the per-row scale along the columns and vice versa.
@triton.jit
def int8_gemm_kernel(a_ptr, b_ptr, scale_a_ptr, scale_b_ptr, c_ptr, m, n, k,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    depth = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k0 in range(0, k, BLOCK_K):
        ks = k0 + depth
        a = tl.load(a_ptr + rows[:, None] * k + ks[None, :],
                    mask=(rows[:, None] < m) & (ks[None, :] < k), other=0)
        b = tl.load(b_ptr + cols[None, :] * k + ks[:, None],
                    mask=(cols[None, :] < n) & (ks[:, None] < k), other=0)
        acc += tl.dot(a, b)
    sa = tl.load(scale_a_ptr + cols, mask=cols < m, other=1.0)
    sb = tl.load(scale_b_ptr + rows, mask=rows < n, other=1.0)
    out = acc.to(tl.float32) * sb[:, None] * sa[None, :]
    tl.store(c_ptr + rows[:, None] * n + cols[None, :], out.to(tl.float16),
             mask=(rows[:, None] < m) & (cols[None, :] < n))


def run_kernel(a, b, scale_a, scale_b, c, m, n, k):
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
    int8_gemm_kernel[grid](a, b, scale_a, scale_b, c, m, n, k, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
