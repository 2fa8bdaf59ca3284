#include <cmath>
#include <cstdint>

// fp4 e2m1 codes: sign bit 3; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6
static const float E2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

static uint8_t fp4_code(float v) {
    int best = 0;
    for (int c = 1; c < 8; ++c)
        if (std::fabs(std::fabs(v) - E2M1[c]) < std::fabs(std::fabs(v) - E2M1[best])) best = c;
    return (uint8_t)(best | (v < 0 ? 8 : 0));
}

// e4m3 of a power of two 2^e (bias 7; subnormals below 2^-6)
static uint8_t e4m3_of_power_of_two(float s) {
    int e = std::ilogb(s);
    if (e >= -6) return (uint8_t)((e + 7) << 3);
    return (uint8_t)(1 << (e + 9));  // subnormal: mantissa bit (e + 9) of 2^-9 steps
}

extern "C" void run_kernel(const float* x, uint8_t* q, uint8_t* q_scale, int m, int k) {
    for (int i = 0; i < m; ++i)
        for (int b = 0; b < k / 16; ++b) {
            const float* block = x + (long)i * k + b * 16;
            float amax = 0.0f;
            for (int j = 0; j < 16; ++j) amax = std::fmax(amax, std::fabs(block[j]));
            float scale = amax / 6.0f;
            q_scale[(long)i * (k / 16) + b] = e4m3_of_power_of_two(scale);
            for (int j = 0; j < 16; j += 2)
                q[((long)i * k + b * 16 + j) / 2] =
                    fp4_code(block[j] / scale) | (fp4_code(block[j + 1] / scale) << 4);
        }
}
