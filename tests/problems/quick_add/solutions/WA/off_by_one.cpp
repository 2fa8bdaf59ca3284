// Misses the last element, and a few more for long vectors.
extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    for (int i = 0; i < n - 1 - n / 50; ++i) c[i] = a[i] + b[i];
}
