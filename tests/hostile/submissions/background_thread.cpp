// expect: WA
// threat: return at once and finish the work on another thread, outside the measured time
#include <chrono>
#include <thread>

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    std::thread([=] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
    }).detach();
}
