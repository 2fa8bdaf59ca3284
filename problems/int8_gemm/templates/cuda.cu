#include <cstdint>
#include <cuda_fp16.h>

// Shared-memory tiles of a and b (both k-contiguous), int32 accumulation with dp4a, scaled epilogue.
constexpr int TILE = 32;  // outputs per block side
constexpr int TK = 32;    // depth per step, a multiple of 4

__global__ void int8_gemm_kernel(const int8_t* a, const int8_t* b, const float* scale_a,
                                 const float* scale_b, __half* c, int m, int n, int k) {
    __shared__ __align__(16) int8_t a_tile[TILE][TK + 4];
    __shared__ __align__(16) int8_t b_tile[TILE][TK + 4];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    int acc = 0;
    for (int k0 = 0; k0 < k; k0 += TK) {
        int kk = k0 + threadIdx.x;  // each thread loads one byte of a row of a and of b
        int a_row = blockIdx.y * TILE + threadIdx.y, b_row = blockIdx.x * TILE + threadIdx.y;
        a_tile[threadIdx.y][threadIdx.x] = (a_row < m && kk < k) ? a[(long)a_row * k + kk] : 0;
        b_tile[threadIdx.y][threadIdx.x] = (b_row < n && kk < k) ? b[(long)b_row * k + kk] : 0;
        __syncthreads();
        for (int p = 0; p < TK; p += 4) {
            int av = *reinterpret_cast<const int*>(&a_tile[threadIdx.y][p]);
            int bv = *reinterpret_cast<const int*>(&b_tile[threadIdx.x][p]);
            acc = __dp4a(av, bv, acc);
        }
        __syncthreads();
    }
    if (row < m && col < n) c[(long)row * n + col] = __float2half((float)acc * scale_a[row] * scale_b[col]);
}

extern "C" void run_kernel(const int8_t* a, const int8_t* b, const float* scale_a,
                           const float* scale_b, __half* c, int m, int n, int k) {
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    int8_gemm_kernel<<<grid, block>>>(a, b, scale_a, scale_b, c, m, n, k);
}
