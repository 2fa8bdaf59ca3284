// An honest add that also runs Hopper-only instructions (sm_90a): a wgmma fence, commit and wait
// with no matrix work in between, executed by every thread of each warpgroup (128 threads a
// block). It compiles only for sm_90a proper (nvcc's -arch=sm_90a shorthand ran a plain
// compute_90 pass that rejects wgmma), and proves on a Hopper GPU that such code runs.
__global__ void __launch_bounds__(128) add_kernel(const float* a, const float* b, float* c, int n) {
    asm volatile("wgmma.fence.sync.aligned;\n"
                 "wgmma.commit_group.sync.aligned;\n"
                 "wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    add_kernel<<<(n + 127) / 128, 128>>>(a, b, c, n);
}
