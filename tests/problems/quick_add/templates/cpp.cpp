// c[i] = a[i] + b[i] for 0 <= i < n
extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    for (int i = 0; i < n; ++i) {
        c[i] = a[i] + b[i];
    }
}
