#include <cmath>

extern "C" void run_kernel(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        const float* in = x + (long)r * cols;
        float* out = y + (long)r * cols;
        float m = -INFINITY;
        for (int c = 0; c < cols; ++c) m = std::fmax(m, in[c]);
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) sum += (out[c] = std::exp(in[c] - m));
        float inv = (float)(1.0 / sum);
        for (int c = 0; c < cols; ++c) out[c] *= inv;
    }
}
