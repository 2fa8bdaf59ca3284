#include <cfloat>
#include <cuda_fp16.h>

// One block per row, float32 throughout: the row maximum, the sum of exponentials, the output.
__device__ float block_reduce(float v, bool is_max, float* scratch) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other = __shfl_xor_sync(0xffffffff, v, offset);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < blockDim.x / 32 ? scratch[threadIdx.x] : (is_max ? -FLT_MAX : 0.f);
        for (int offset = 16; offset > 0; offset >>= 1) {
            float other = __shfl_xor_sync(0xffffffff, v, offset);
            v = is_max ? fmaxf(v, other) : v + other;
        }
        if (threadIdx.x == 0) scratch[0] = v;
    }
    __syncthreads();
    v = scratch[0];
    __syncthreads();
    return v;
}

__global__ void softmax_kernel(const __half* x, __half* y, int cols) {
    __shared__ float scratch[32];
    const __half* in = x + (long)blockIdx.x * cols;
    __half* out = y + (long)blockIdx.x * cols;
    float m = -FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, __half2float(in[c]));
    m = block_reduce(m, true, scratch);
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += __expf(__half2float(in[c]) - m);
    float inv = 1.f / block_reduce(sum, false, scratch);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        out[c] = __float2half(__expf(__half2float(in[c]) - m) * inv);
}

extern "C" void run_kernel(const __half* x, __half* y, int rows, int cols) {
    softmax_kernel<<<rows, 256>>>(x, y, cols);
}
