// expect: WA
// threat: return a constant
extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    for (int i = 0; i < n; ++i) c[i] = 0.5f;
}
