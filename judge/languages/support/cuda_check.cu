// Trusted support code, linked into every cuda submission's shared library (so it shares the
// submission's CUDA runtime): the harness calls kjudge_device_check after each run_kernel to turn
// launch errors (invalid configuration, too many resources) and asynchronous errors (illegal
// address, trap) into a runtime error with the CUDA message instead of silently unwritten outputs.
#include <cuda_runtime.h>
#include <cstdio>

extern "C" int kjudge_device_check(char* message, int size) {
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    if (err == cudaSuccess) return 0;
    std::snprintf(message, size, "%s: %s", cudaGetErrorName(err), cudaGetErrorString(err));
    return static_cast<int>(err);
}
