// __half is used without including <cuda_fp16.h>.
__global__ void rmsnorm_kernel(const __half* x, __half* y) { y[threadIdx.x] = x[threadIdx.x]; }

extern "C" void run_kernel(const __half* x, const __half* weight, __half* y, int rows, int hidden,
                           float eps) {
    rmsnorm_kernel<<<rows, 256>>>(x, y);
}
