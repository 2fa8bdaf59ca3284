extern "C" void run_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    float* writable = a;  // error: a is const
    writable[0] = b[0] + c[0] + m + n + k;
}
