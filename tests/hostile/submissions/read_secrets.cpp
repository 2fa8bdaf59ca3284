// expect: AC
// backends: bwrap docker
// threat: read the problem's reference, other submissions' builds, the judge's database,
//         host secrets, or the judge's environment
#include <cstdio>
#include <cstdlib>
#include <dirent.h>

static bool readable(const char* path) {
    FILE* f = fopen(path, "r");
    if (!f) return false;
    fclose(f);
    return true;
}

static bool listable(const char* path) {
    DIR* d = opendir(path);
    if (!d) return false;
    closedir(d);
    return true;
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    bool leaked = readable("@PROBLEM_DIR@/reference.py") || readable("@PROBLEM_DIR@/problem.yaml")
        || listable("@CACHE_DIR@") || readable("@DATABASE@") || readable("/etc/shadow")
        || readable("@REPO@/README.md") || readable("@REPO@/judge/pipeline.py")
        || getenv("KJUDGE_SECRET_CANARY") != nullptr;
    for (int i = 0; i < n; ++i) c[i] = leaked ? 0.f : a[i] + b[i];
}
