extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    volatile unsigned long spin = 0;
    for (;;) ++spin;
}
