// expect: WA
// threat: read memory the reference or an earlier call freed (it never was in this process)
#include <cstdlib>
#include <cstring>

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    float* stale = (float*)malloc(sizeof(float) * n);  // uninitialised on purpose
    memcpy(c, stale, sizeof(float) * n);
    free(stale);
}
