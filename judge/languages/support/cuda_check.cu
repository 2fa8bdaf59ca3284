// Trusted support code, linked into every cuda submission's shared library (so it shares the
// submission's CUDA runtime): the harness calls kjudge_device_check after each run_kernel to turn
// launch errors (invalid configuration, too many resources) and asynchronous errors (illegal
// address, trap) into a runtime error with the CUDA message instead of silently unwritten outputs.
// `synchronize`: only where the harness's own synchronize failed (to name the error in this
// runtime); after one that succeeded a second is the same wait again, inside the judge's clock.
#include <cuda_runtime.h>
#include <cstdio>

extern "C" int kjudge_device_check(char* message, int size, int synchronize) {
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && synchronize) err = cudaDeviceSynchronize();
    if (err == cudaSuccess) return 0;
    std::snprintf(message, size, "%s: %s", cudaGetErrorName(err), cudaGetErrorString(err));
    return static_cast<int>(err);
}
