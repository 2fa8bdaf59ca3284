// expect: AC
// backends: bwrap docker
// threat: write outside the scratch directory (the repository, the problem folder, the system)
#include <cstdio>

static bool writes(const char* path) {
    FILE* f = fopen(path, "w");
    if (!f) return false;
    fputs("owned", f);
    fclose(f);
    return true;
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    bool escaped = writes("@REPO@/HACKED") | writes("@PROBLEM_DIR@/HACKED") | writes("/usr/HACKED");
    for (int i = 0; i < n; ++i) c[i] = escaped ? 0.f : a[i] + b[i];
}
