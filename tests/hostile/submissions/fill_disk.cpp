// expect: AC
// threat: fill the disk from the scratch directory (writes stop at the run's file size limit)
#include <cstdio>
#include <vector>

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    std::vector<char> block(1 << 20, 'x');
    long written = 0;
    FILE* f = fopen("filler.bin", "w");
    for (int i = 0; i < 1024 && f; ++i) {
        size_t put = fwrite(block.data(), 1, block.size(), f);
        if (fflush(f) != 0 || put != block.size()) break;
        written += (long)put;
    }
    if (f) fclose(f);
    bool filled = written >= (512L << 20);  // the limit here is 64 MiB
    for (int i = 0; i < n; ++i) c[i] = filled ? 0.f : a[i] + b[i];
}
