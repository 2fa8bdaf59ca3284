// expect: AC
// problem: matmul
// timing: yes
// control: solutions/AC/ipj_loop.cpp
// threat: hash a sample of the inputs and replay the answer cached for the same content (a hit costs a copy, not a product)
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

static std::unordered_map<uint64_t, std::vector<float>> answers;

static uint64_t fingerprint(const float* x, long count, uint64_t h) {
    for (long i = 0; i < count; i += count / 61 + 1) {
        uint32_t bits;
        std::memcpy(&bits, x + i, 4);
        h = (h ^ bits) * 1099511628211ull;
    }
    return h;
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    const size_t size = (size_t)m * n;
    uint64_t key = fingerprint(b, (long)k * n, fingerprint(a, (long)m * k, 1469598103934665603ull + size));
    auto found = answers.find(key);
    if (found != answers.end()) {
        std::memcpy(c, found->second.data(), size * sizeof(float));
        return;
    }
    for (long i = 0; i < m; ++i) {
        float* row = c + i * n;
        for (int j = 0; j < n; ++j) row[j] = 0.f;
        for (long p = 0; p < k; ++p)
            for (int j = 0; j < n; ++j) row[j] += a[i * k + p] * b[p * n + j];
    }
    answers[key].assign(c, c + size);
}
