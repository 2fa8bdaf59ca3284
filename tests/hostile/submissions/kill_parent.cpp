// expect: AC
// backends: bwrap docker
// threat: kill or signal the parent, pid 1 and everything else the sandbox user may signal
#include <csignal>
#include <unistd.h>

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    static bool done = false;
    if (!done) {
        done = true;
        kill(getppid(), SIGKILL);
        kill(1, SIGKILL);
        signal(SIGTERM, SIG_IGN);
        kill(-1, SIGTERM);
    }
    for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
