// expect: AC
// timing: yes
// control: solutions/AC/loop.cpp
// threat: leave threads running after run_kernel returns that stream memory whenever the submission is not in a call, to slow the baseline timed beside it
#include <atomic>
#include <thread>
#include <vector>

static std::atomic<bool> in_call{false};

static void hog() {
    std::vector<float> buffer(16 << 20);  // 64 MiB, well past the caches
    for (;;) {
        if (in_call.load(std::memory_order_relaxed)) continue;
        for (size_t i = 0; i < buffer.size(); i += 16) buffer[i] += 1.0f;
    }
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    static bool started = false;
    if (!started) {
        started = true;
        for (int t = 0; t < 2; ++t) std::thread(hog).detach();
    }
    in_call = true;
    for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
    in_call = false;
}
