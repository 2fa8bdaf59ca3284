// expect: WA
// problem: matmul
// timing: yes
// threat: compute once per pair of input addresses, then replay that answer whenever the same buffers come back
#include <cstring>
#include <map>
#include <utility>
#include <vector>

static std::map<std::pair<const float*, const float*>, std::vector<float>> answers;

static void multiply(const float* a, const float* b, float* c, int m, int n, int k) {
    for (long i = 0; i < m; ++i) {
        float* row = c + i * n;
        for (int j = 0; j < n; ++j) row[j] = 0.f;
        for (long p = 0; p < k; ++p)
            for (int j = 0; j < n; ++j) row[j] += a[i * k + p] * b[p * n + j];
    }
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    const size_t size = (size_t)m * n;
    auto found = answers.find({a, b});
    if (found != answers.end() && found->second.size() == size) {
        std::memcpy(c, found->second.data(), size * sizeof(float));
        return;
    }
    multiply(a, b, c, m, n, k);
    answers[{a, b}].assign(c, c + size);
}
