// expect: WA
// problem: matmul
// timing: yes
// threat: switch the harness's output poisoning off from native code (Python's C API), compute each input set once, then return at once: the outputs still hold the answers
extern "C" {
int PyGILState_Ensure(void);
void PyGILState_Release(int);
int PyRun_SimpleString(const char*);
}

static long calls = 0;
static int shape = -1;

extern "C" void run_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    if (calls == 0) {
        int state = PyGILState_Ensure();  // ctypes released the GIL for this call
        PyRun_SimpleString("import sys\nsys.modules['__main__'].poison = lambda t: None\n");
        PyGILState_Release(state);
    }
    if (shape != m * 1000003 + n * 1009 + k) { shape = m * 1000003 + n * 1009 + k; calls = 0; }
    if (calls++ >= 2) return;  // every output buffer already holds its set's answer
    for (long i = 0; i < m; ++i) {
        float* row = c + i * n;
        for (int j = 0; j < n; ++j) row[j] = 0.f;
        for (long p = 0; p < k; ++p)
            for (int j = 0; j < n; ++j) row[j] += a[i * k + p] * b[p * n + j];
    }
}
