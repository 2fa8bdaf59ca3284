// expect: RE
// timing: yes
// threat: write a timing reply of 0.1 µs into the harness's results channel from native code before doing the work, so that the judge's clock stops early
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

static long calls = 0;

static void forge() {
    struct stat own[3];
    for (int fd = 0; fd < 3; ++fd) fstat(fd, &own[fd]);
    const char* line = "{\"ok\": true, \"ms\": 0.0001}\n";
    for (int fd = 3; fd < 256; ++fd) {
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
        bool known = false;
        for (int i = 0; i < 3; ++i) known |= st.st_ino == own[i].st_ino;
        if (!known) (void)!write(fd, line, strlen(line));  // the duplicate of the original stdout
    }
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    if (++calls > 4) forge();  // only once the timing has begun
    for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
