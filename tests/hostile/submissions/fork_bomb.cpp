// expect: TLE
// threat: fork bomb (the process cap stops the growth; the time limit ends the run)
#include <unistd.h>

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    for (;;) fork();
}
