extern "C" void run_kernel(const float* x, float* y, int rows, int cols) {
    for (int i = 0; i < rows * cols; ++i) y[i] = expf_undeclared(x[i]);
}
