// c[i][j] = sum_p a[i][p] * b[p][j]; i-p-j order keeps the inner loop contiguous.
extern "C" void run_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    for (long i = 0; i < m; ++i) {
        float* row = c + i * n;
        for (int j = 0; j < n; ++j) row[j] = 0.f;
        for (long p = 0; p < k; ++p) {
            float s = a[i * k + p];
            const float* brow = b + p * n;
            for (int j = 0; j < n; ++j) row[j] += s * brow[j];
        }
    }
}
