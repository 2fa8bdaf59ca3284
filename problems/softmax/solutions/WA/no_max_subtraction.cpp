#include <cmath>

// Forgets to subtract the row maximum: exp() overflows on the rows with large values.
extern "C" void run_kernel(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        float sum = 0.f;
        for (int c = 0; c < cols; ++c) sum += std::exp(x[(long)r * cols + c]);
        for (int c = 0; c < cols; ++c) y[(long)r * cols + c] = std::exp(x[(long)r * cols + c]) / sum;
    }
}
