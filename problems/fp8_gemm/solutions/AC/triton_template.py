import triton
import triton.language as tl


@triton.jit
def fp8_gemm_kernel(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, m, n, k,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # BLOCK_K is the scales' block (128): one a scale per row and one b scale per
    # 128-column group apply to each partial product
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    depth = tl.arange(0, BLOCK_K)
    scale_k = tl.cdiv(k, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, scale_k):
        ks = kb * BLOCK_K + depth
        a = tl.load(a_ptr + rows[:, None] * k + ks[None, :],
                    mask=(rows[:, None] < m) & (ks[None, :] < k), other=0.0)
        b = tl.load(b_ptr + cols[None, :] * k + ks[:, None],  # b read transposed: [BLOCK_K, BLOCK_N]
                    mask=(cols[None, :] < n) & (ks[:, None] < k), other=0.0)
        partial = tl.dot(a, b, out_dtype=tl.float32)
        sa = tl.load(a_scale_ptr + rows * scale_k + kb, mask=rows < m, other=0.0)
        sb = tl.load(b_scale_ptr + (cols // BLOCK_K) * scale_k + kb, mask=cols < n, other=0.0)
        acc += partial * sa[:, None] * sb[None, :]
    tl.store(c_ptr + rows[:, None] * n + cols[None, :], acc.to(tl.bfloat16),
             mask=(rows[:, None] < m) & (cols[None, :] < n))


def run_kernel(a, b, a_scale, b_scale, c, m, n, k):
    block_m, block_n = 64, 64
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    fp8_gemm_kernel[grid](a, b, a_scale, b_scale, c, m, n, k,
                          BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=128)
