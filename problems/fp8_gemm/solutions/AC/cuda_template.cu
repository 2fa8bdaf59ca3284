#include <cuda_bf16.h>
#include <cuda_fp8.h>

// One output per thread; per 128-deep step, shared tiles of a and b (converted to float), the
// partial dot product, then the step's two block scales.
constexpr int TILE = 16;   // outputs per block side
constexpr int BLOCK = 128; // the scales' block along k (and along n for b)

__global__ void fp8_gemm_kernel(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b,
                                const float* a_scale, const float* b_scale, __nv_bfloat16* c,
                                int m, int n, int k) {
    __shared__ float a_tile[TILE][BLOCK + 1];
    __shared__ float b_tile[TILE][BLOCK + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int scale_k = (k + BLOCK - 1) / BLOCK;
    float acc = 0.0f;
    for (int kb = 0; kb < scale_k; ++kb) {
        for (int p = tx; p < BLOCK; p += TILE) {  // row ty of each tile, TILE threads along k
            int kk = kb * BLOCK + p;
            int a_row = blockIdx.y * TILE + ty, b_row = blockIdx.x * TILE + ty;
            a_tile[ty][p] = (a_row < m && kk < k) ? float(a[(long)a_row * k + kk]) : 0.0f;
            b_tile[ty][p] = (b_row < n && kk < k) ? float(b[(long)b_row * k + kk]) : 0.0f;
        }
        __syncthreads();
        float partial = 0.0f;
        for (int p = 0; p < BLOCK; ++p) partial += a_tile[ty][p] * b_tile[tx][p];
        if (row < m && col < n)
            acc += partial * a_scale[(long)row * scale_k + kb] * b_scale[(long)(col / BLOCK) * scale_k + kb];
        __syncthreads();
    }
    if (row < m && col < n) c[(long)row * n + col] = __float2bfloat16(acc);
}

extern "C" void run_kernel(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* a_scale,
                           const float* b_scale, __nv_bfloat16* c, int m, int n, int k) {
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    fp8_gemm_kernel<<<grid, block>>>(a, b, a_scale, b_scale, c, m, n, k);
}
