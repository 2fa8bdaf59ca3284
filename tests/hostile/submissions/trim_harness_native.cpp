// expect: AC
// problem: softmax
// timing: yes
// backends: bwrap
// control: solutions/AC/three_pass.cpp
// threat: trim the harness's per-call work from native code (issue 42): through Python's C API the harness's timed loop is replaced by one in C that calls run_kernel over a table of the batch's pointers, taking each call's release in C too, (no Python, no ctypes conversion per call), the kernel and its reports unchanged; the judge that subtracted the baseline harness's per-call work credited the difference as speed
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

extern "C" {
int PyGILState_Ensure(void);
void PyGILState_Release(int);
int PyRun_SimpleString(const char*);
}

extern "C" void run_kernel(const float* x, float* y, int rows, int cols);

// the judge's release of call i's inputs, taken in C: wait for the count; where the set comes
// as a file, receive the descriptor and map it over the call's slot (see the harness's Release)
static void take(int sock, volatile int64_t* released, int64_t taken, const int64_t* region,
                 int mapped) {
    while (*released <= taken) {}
    if (!mapped) return;
    char data[8];
    struct iovec iov = {data, sizeof data};
    union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    do {
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof control.buf;
    } while (recvmsg(sock, &msg, MSG_DONTWAIT) < 0);
    int fd;
    std::memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof fd);
    mmap(reinterpret_cast<void*>(region[0]), region[1], PROT_READ,
         MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0);
    close(fd);
}

// the whole batch in C: each call's inputs released, the call on them, its time in nanoseconds
extern "C" void trimmed_batch(const int64_t* table, int calls, int rows, int cols, int64_t* ns,
                              int sock, int64_t control, const int64_t* regions, int64_t taken,
                              int mapped) {
    auto* released = reinterpret_cast<volatile int64_t*>(control);
    for (int i = 0; i < calls; ++i) {
        if (i) take(sock, released, taken + i, regions + 2 * i, mapped);  // call 0's in prepare
        auto start = std::chrono::steady_clock::now();
        run_kernel(reinterpret_cast<const float*>(table[2 * i]),
                   reinterpret_cast<float*>(table[2 * i + 1]), rows, cols);
        ns[i] = std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now() - start).count();
        released[1] = taken + i + 1;  // done
    }
}

static bool patched = false;

static void patch() {
    patched = true;
    int state = PyGILState_Ensure();
    PyRun_SimpleString(
        "import sys, ctypes\n"
        "h = sys.modules['__main__']\n"
        "protocol = sys.modules['protocol']\n"
        "honest = h.Harness.op_time\n"
        "def lean(self, msg, record=False):\n"
        "    batch = self.prepared\n"
        "    if batch is None or batch.kernel is not self.kernel or batch.gate is None:\n"
        "        return honest(self, msg, record)\n"
        "    sets, release, self.prepared = batch.sets, batch.gate.release, None\n"
        "    n = len(sets)\n"
        "    table = (ctypes.c_int64 * (2 * n))(*[p for s in sets for p in (s.values[0].data_ptr(), s.values[1].data_ptr())])\n"
        "    regions = (ctypes.c_int64 * (2 * n))(*[v for s in sets for v in s.region])\n"
        "    control = ctypes.addressof(ctypes.c_char.from_buffer(release.control))\n"
        "    ns = (ctypes.c_int64 * n)()\n"
        "    self.trimmed(table, n, int(sets[0].values[2]), int(sets[0].values[3]), ns, release.sock.fileno(), ctypes.c_int64(control), regions, ctypes.c_int64(release.taken - 1), int(release.mapped))\n"
        "    release.taken += n - 1\n"
        "    self.collected = sets\n"
        "    return {'ok': True, 'reports': protocol.pack_reports([t / 1e6 for t in ns])}\n"
        "f = sys._getframe()\n"
        "while f is not None and 'handlers' not in f.f_locals:\n"
        "    f = f.f_back\n"
        "harness = f.f_locals['self']\n"
        "harness.trimmed = ctypes.CDLL(harness.config['artifact']).trimmed_batch\n"
        "f.f_locals['handlers']['time'] = lean.__get__(harness)\n");
    PyGILState_Release(state);
}

extern "C" void run_kernel(const float* x, float* y, int rows, int cols) {
    if (!patched) patch();
    for (int r = 0; r < rows; ++r) {
        const float* in = x + (long)r * cols;
        float* out = y + (long)r * cols;
        float m = -INFINITY;
        for (int c = 0; c < cols; ++c) m = std::fmax(m, in[c]);
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) sum += (out[c] = std::exp(in[c] - m));
        float inv = (float)(1.0 / sum);
        for (int c = 0; c < cols; ++c) out[c] *= inv;
    }
}
