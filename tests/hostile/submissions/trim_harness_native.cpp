// expect: AC
// problem: softmax
// timing: yes
// backends: bwrap
// control: solutions/AC/three_pass.cpp
// gain: none
// threat: trim the harness's per-call work from native code (issue 42): through Python's C API the harness's timed loop is replaced by one in C that calls run_kernel over a table of the batch's pointers (no Python, no ctypes conversion per call), the kernel and its reports unchanged; the judge that subtracted the baseline harness's per-call work credited the difference as speed
#include <cmath>
#include <chrono>
#include <cstdint>

extern "C" {
int PyGILState_Ensure(void);
void PyGILState_Release(int);
int PyRun_SimpleString(const char*);
}

extern "C" void run_kernel(const float* x, float* y, int rows, int cols);

// the whole batch in C: each call on its own set, its time in nanoseconds
extern "C" void trimmed_batch(const int64_t* table, int calls, int rows, int cols, int64_t* ns) {
    for (int i = 0; i < calls; ++i) {
        auto start = std::chrono::steady_clock::now();
        run_kernel(reinterpret_cast<const float*>(table[2 * i]),
                   reinterpret_cast<float*>(table[2 * i + 1]), rows, cols);
        ns[i] = std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now() - start).count();
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
        "    calls = msg.get('calls', 1)\n"
        "    if msg.get('empty') or record or msg.get('record') or not msg.get('fresh'):\n"
        "        return honest(self, msg, record)\n"
        "    batch = self.prepared if self.prepared is not None else self.fresh[:calls]\n"
        "    batch, self.prepared = batch[:calls], None\n"
        "    table = (ctypes.c_int64 * (2 * len(batch)))(*[p for s in batch for p in (s.values[0].data_ptr(), s.values[1].data_ptr())])\n"
        "    ns = (ctypes.c_int64 * len(batch))()\n"
        "    self.trimmed(table, len(batch), batch[0].values[2], batch[0].values[3], ns)\n"
        "    self.collected = batch\n"
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
