// expect: WA
// timing: yes
// threat: compute once per test point, then replay the first answer on later calls
#include <vector>

static std::vector<float> saved;
static int saved_n = -1, calls = 0;

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    if (saved_n != n) { saved_n = n; calls = 0; saved.resize(n); }
    if (calls++ < 4) for (int i = 0; i < n; ++i) saved[i] = a[i] + b[i];
    for (int i = 0; i < n; ++i) c[i] = saved[i];
}
