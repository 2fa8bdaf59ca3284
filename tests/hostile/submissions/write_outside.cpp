// expect: AC
// backends: bwrap docker
// threat: write outside the scratch directory (the repository, the problem folder, the system);
//         the test asserts that none of these files appears on the host
#include <cstdio>

static void attempt(const char* path) {
    if (FILE* f = fopen(path, "w")) {
        fputs("owned", f);
        fclose(f);
    }
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    attempt("@REPO@/HACKED");
    attempt("@PROBLEM_DIR@/HACKED");
    attempt("/usr/HACKED");
    for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
