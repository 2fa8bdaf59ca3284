#include <cuda_fp16.h>

// One block per row: a float32 sum of squares reduced across the block, then the scaled row.
__global__ void rmsnorm_kernel(const __half* x, const __half* weight, __half* y, int hidden,
                               float eps) {
    __shared__ float partial[32];
    const __half* in = x + (long)blockIdx.x * hidden;
    __half* out = y + (long)blockIdx.x * hidden;
    float sum = 0.f;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
        float v = __half2float(in[c]);
        sum += v * v;
    }
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
        sum = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
        for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, offset);
        if (threadIdx.x == 0) partial[0] = rsqrtf(sum / hidden + eps);
    }
    __syncthreads();
    float scale = partial[0];
    for (int c = threadIdx.x; c < hidden; c += blockDim.x)
        out[c] = __float2half(__half2float(in[c]) * scale * __half2float(weight[c]));
}

extern "C" void run_kernel(const __half* x, const __half* weight, __half* y, int rows, int hidden,
                           float eps) {
    rmsnorm_kernel<<<rows, 256>>>(x, weight, y, hidden, eps);
}
