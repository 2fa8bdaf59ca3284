// Reads b as if it were stored column-major.
extern "C" void run_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    for (long i = 0; i < m; ++i)
        for (long j = 0; j < n; ++j) {
            float acc = 0.f;
            for (long p = 0; p < k; ++p) acc += a[i * k + p] * b[j * k + p];
            c[i * n + j] = acc;
        }
}
