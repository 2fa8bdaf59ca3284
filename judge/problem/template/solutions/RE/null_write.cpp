#include <cstdint>
// Writes through a null pointer: the process dies with SIGSEGV.
extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    volatile std::uintptr_t address = 0;
    *reinterpret_cast<volatile float*>(address) = a[0] + b[0];
}
