// expect: AC
// threat: kill or signal the parent, pid 1, the process group and everything else the run may signal (as root under the process backend: every process of the host)
#include <csignal>
#include <unistd.h>

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    static bool done = false;
    if (!done) {
        done = true;
        kill(getppid(), SIGKILL);
        kill(1, SIGKILL);
        signal(SIGTERM, SIG_IGN);
        kill(0, SIGTERM);
        kill(-1, SIGTERM);
        kill(-1, SIGKILL);
    }
    for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
