// expect: WA
// problem: matmul
// timing: yes
// threat: the judge cycles its input sets: compute the first call of each, then replay by call count
#include <cstring>
#include <vector>

static std::vector<float> answers[2];
static long calls = 0;
static int shape = -1;

extern "C" void run_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    const size_t size = (size_t)m * n;
    if (shape != m * 1000003 + n * 1009 + k) { shape = m * 1000003 + n * 1009 + k; calls = 0; }
    std::vector<float>& slot = answers[calls++ % 2];
    if (calls > 2) {
        std::memcpy(c, slot.data(), size * sizeof(float));
        return;
    }
    for (long i = 0; i < m; ++i) {
        float* row = c + i * n;
        for (int j = 0; j < n; ++j) row[j] = 0.f;
        for (long p = 0; p < k; ++p)
            for (int j = 0; j < n; ++j) row[j] += a[i * k + p] * b[p * n + j];
    }
    slot.assign(c, c + size);
}
