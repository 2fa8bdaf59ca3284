#define TILE 16

// Shared-memory tiled SGEMM; a, b, c are device pointers.
__global__ void matmul_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float as[TILE][TILE], bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < k; t += TILE) {
        as[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[(long)row * k + t + threadIdx.x] : 0.f;
        bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? b[(long)(t + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
        for (int p = 0; p < TILE; ++p) acc += as[threadIdx.y][p] * bs[p][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[(long)row * n + col] = acc;
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    dim3 threads(TILE, TILE), blocks((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    matmul_kernel<<<blocks, threads>>>(a, b, c, m, n, k);
}
