// a, b, c are device pointers; launch on the default stream.
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    int threads = 256;
    add_kernel<<<(n + threads - 1) / threads, threads>>>(a, b, c, n);
}
