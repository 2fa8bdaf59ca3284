"""Hostile kernels on a GPU (`pytest -m gpu`): the tricks of public kernel boards, each judged as
a contestant would submit it. Skipped without a CUDA device; their sources compile on every run
(tests/test_device_checks.py). None of them attacks the host (they trick the timing and the
checks only), so the device self-test may run them in whatever sandbox works there.

  persisting L2   raises the persisting-L2 limit and pins its inputs there: not faster than the
                  same kernel without (the judge resets persisting lines before every call)
  patched timer   a Python run_kernel patches the harness's timer to report a tenth: charged
  skipped calls   computes on every other call only: the checked timed calls catch it (WA)
  late error      an illegal address on the 12th call, after the checks passed: RE, and the
                  next judging on the GPU is AC
  hung kernel     spins forever on its 4th call: TLE, the GPU is released, the next judging AC
  stale block     after three honest calls copies an empty tensor from torch's caching
                  allocator, whose freed block holds an earlier call's sum: WA
  fused batch     (issue 42) softmax: learns the batch's slots (their device buffers are fixed
                  per test point) and computes every call of a batch in its first call's launch,
                  or every pair in the first of the two: each call's inputs reach the device
                  only once the call before it is done, so the later calls' are last round's: WA
  escaped work    (issue 42) launches a long kernel from a thread after its last call returned:
                  the baseline's harness finds the device busy before its turn, the round is
                  left out and the result held; no speedup over the honest kernel
"""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.judging.pipeline import JudgeOptions, judge_source
from judge.problem.schema import load_problem
from judge.verdicts import Verdict

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = (ROOT / "problems/vector_add/templates/cuda.cu").read_text()

PERSISTING_L2_CU = r"""
// Raises the persisting-L2 limit to the most the card allows and marks a and b persisting on
// its stream: without the judge's reset, lines kept from one call would survive the flush.
#include <cuda_runtime.h>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    static cudaStream_t stream = nullptr;
    if (!stream) {
        int device = 0, most = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, device);
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, most);
        cudaStreamCreate(&stream);
    }
    cudaStreamAttrValue window = {};
    window.accessPolicyWindow.base_ptr = (void*)a;
    window.accessPolicyWindow.num_bytes = (size_t)n * sizeof(float);
    window.accessPolicyWindow.hitRatio = 1.0f;
    window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window);
    add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    cudaStreamSynchronize(stream);
}
"""

SKIPPED_CALLS_CU = TEMPLATE.replace(
    "    int threads = 256;",
    "    static long calls = 0;\n    if (calls++ % 2) return;  // every other call does nothing\n"
    "    int threads = 256;")

LATE_ERROR_CU = TEMPLATE.replace(
    "    int threads = 256;",
    "    static long calls = 0;\n"
    "    if (++calls == 12) { add_kernel<<<1, 1>>>(a, b, c + (1L << 40), n); return; }\n"
    "    int threads = 256;")

HUNG_CU = r"""
__global__ void add_kernel(const float* a, const float* b, float* c, int n, int hang) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (hang) { volatile int forever = 1; while (forever) {} }
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    static long calls = 0;
    add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n, ++calls == 4);
}
"""

PATCHED_TIMER_PY = '''
import sys

import torch

_harness = sys.modules["__main__"]
_real = _harness.Device.time_call


def _tenth(self, fn, *args):
    return _real(self, fn, *args) / 10


_harness.Device.time_call = _tenth


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
'''

HONEST_TORCH_PY = '''
import torch


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
'''

STALE_ALLOCATOR_PY = '''
import torch

calls = [0]


def run_kernel(a, b, c, n):
    calls[0] += 1
    if calls[0] <= 3:
        total = a + b  # freed on return: the allocator keeps the block, sum and all
        c.copy_(total)
        return
    c.copy_(torch.empty_like(c))
'''

FUSED_SOFTMAX_CU = r"""
// Softmax, a thread per row. FUSE 0: each call on its own. FUSE 1: the device buffers of a
// point's calls are fixed, so the slots seen in the first turns are remembered in a table, and
// the first call of a later batch computes every remembered call in one launch (the later calls
// return at once). FUSE 2: the same for each pair of calls.
#include <cuda_runtime.h>
#include <math.h>
#define FUSE 1
#define MAX_SLOTS 1024
__global__ void softmax_rows(const float* const* xs, float* const* ys, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* x = xs[blockIdx.y] + (long)r * cols;
    float* y = ys[blockIdx.y] + (long)r * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, x[c]);
    for (int c = 0; c < cols; ++c) s += (y[c] = expf(x[c] - m));
    for (int c = 0; c < cols; ++c) y[c] /= s;
}
static const float* seen_x[MAX_SLOTS];
static float* seen_y[MAX_SLOTS];
static int seen = 0;
static const float** table_x = nullptr;
static float** table_y = nullptr;
static void launch(int first, int calls, int rows, int cols) {
    cudaMemcpy(table_x, seen_x + first, calls * sizeof(void*), cudaMemcpyHostToDevice);
    cudaMemcpy(table_y, seen_y + first, calls * sizeof(void*), cudaMemcpyHostToDevice);
    softmax_rows<<<dim3((rows + 127) / 128, calls), 128>>>(table_x, table_y, rows, cols);
}
extern "C" void run_kernel(const float* x, float* y, int rows, int cols) {
    if (!table_x) {
        cudaMalloc(&table_x, MAX_SLOTS * sizeof(void*));
        cudaMalloc(&table_y, MAX_SLOTS * sizeof(void*));
    }
    int slot = -1;
    for (int i = 0; i < seen; ++i) if (seen_x[i] == x && seen_y[i] == y) slot = i;
    if (slot < 0 && seen < MAX_SLOTS) { seen_x[seen] = x; seen_y[seen] = y; slot = seen++; }
    if (FUSE == 0 || slot < 0) { seen_x[MAX_SLOTS - 1] = x; seen_y[MAX_SLOTS - 1] = y;
                                 launch(MAX_SLOTS - 1, 1, rows, cols); return; }
    int group = FUSE == 1 ? seen : 2;
    if (slot % group) return;  // computed by its group's first call
    launch(slot, slot + group <= seen ? group : seen - slot, rows, cols);
}
"""

ESCAPED_WORK_CU = r"""#include <cuda_runtime.h>
#include <thread>
#include <unistd.h>
// After each call returns (the harness has synchronized by the time it sleeps out), a thread
// launches ~2 ms of spinning on a stream of its own: the device is busy into the next turn.
__global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
static void escape() {
    std::thread([] {
        usleep(300);
        static cudaStream_t stream = nullptr;
        if (!stream) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        spin<<<1, 1, 0, stream>>>(4000000LL);
    }).detach();
}
""" + TEMPLATE.replace('extern "C" void run_kernel(', 'static void run_kernel_honest(', 1) + r"""
extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    run_kernel_honest(a, b, c, n);
    escape();
}
"""

SOURCES = (PERSISTING_L2_CU, SKIPPED_CALLS_CU, LATE_ERROR_CU, HUNG_CU, FUSED_SOFTMAX_CU,
           FUSED_SOFTMAX_CU.replace("#define FUSE 1", "#define FUSE 2"), ESCAPED_WORK_CU)


@pytest.fixture(scope="module")
def vector_add():
    return load_problem(ROOT / "problems/vector_add")


@pytest.fixture(scope="module")
def softmax():
    return load_problem(ROOT / "problems/softmax")


def judge(problem, source, cuda, sandbox, language="cuda", **options):
    return judge_source(problem, source, language=language, device=cuda, sandbox=sandbox,
                        options=JudgeOptions(**options))


def _times(result) -> dict[str, float]:
    return {t.name: t.time_ms for t in result.tests if t.time_ms is not None}


def test_a_raised_persisting_l2_limit_buys_no_time(cuda, gpu_sandbox, vector_add):
    plain = judge(vector_add, PERSISTING_L2_CU.replace(
        "cudaStreamSetAttribute(stream", "if (0) cudaStreamSetAttribute(stream"),
        cuda, gpu_sandbox)
    persisting = judge(vector_add, PERSISTING_L2_CU, cuda, gpu_sandbox)
    assert plain.verdict is Verdict.AC and persisting.verdict is Verdict.AC, persisting.message
    setup = persisting.applied["timing_setup"]
    assert setup["persisting_l2_reset"] and setup["persisting_l2_limit_zeroed"]
    for name, ms in _times(plain).items():
        assert _times(persisting)[name] > 0.95 * ms, (name, _times(persisting), _times(plain))


def test_a_patched_timer_is_charged_what_the_judges_clock_saw(cuda, gpu_sandbox, vector_add):
    honest = judge(vector_add, HONEST_TORCH_PY, cuda, gpu_sandbox, language="torch")
    forged = judge(vector_add, PATCHED_TIMER_PY, cuda, gpu_sandbox, language="torch")
    assert honest.verdict is Verdict.AC and forged.verdict is Verdict.AC
    largest = max(_times(honest), key=_times(honest).get)
    assert _times(forged)[largest] > 0.9 * _times(honest)[largest], (_times(forged),
                                                                     _times(honest))
    assert any("charged" in flag for flag in forged.flags), forged.flags


@pytest.mark.xfail(strict=True, reason="issue 28: a forgery under the judge's clock's allowance "
                                       "(0.05 ms + 5 %) is kept on calls that short")
def test_a_patched_timer_is_charged_on_the_shortest_timed_point_too(cuda, gpu_sandbox,
                                                                      vector_add):
    honest = judge(vector_add, HONEST_TORCH_PY, cuda, gpu_sandbox, language="torch")
    forged = judge(vector_add, PATCHED_TIMER_PY, cuda, gpu_sandbox, language="torch")
    shortest = min(_times(honest), key=_times(honest).get)
    assert _times(forged)[shortest] > 0.9 * _times(honest)[shortest]


def test_work_skipped_on_every_other_call_is_wrong(cuda, gpu_sandbox, vector_add):
    result = judge(vector_add, SKIPPED_CALLS_CU, cuda, gpu_sandbox)
    assert result.verdict is Verdict.WA, result.to_dict()


def test_an_output_left_in_the_allocators_freed_block_is_wrong(cuda, gpu_sandbox, vector_add):
    result = judge(vector_add, STALE_ALLOCATOR_PY, cuda, gpu_sandbox, language="torch")
    assert result.verdict is Verdict.WA, result.to_dict()


def test_an_illegal_address_on_a_late_call_is_re_and_the_gpu_judges_on(cuda, gpu_sandbox,
                                                                         vector_add):
    result = judge(vector_add, LATE_ERROR_CU, cuda, gpu_sandbox)
    assert result.verdict is Verdict.RE, result.to_dict()
    text = result.message + "".join(t.message for t in result.tests)
    assert "illegal" in text.lower(), text
    assert judge(vector_add, TEMPLATE, cuda, gpu_sandbox).verdict is Verdict.AC


def test_a_hung_kernel_is_tle_and_the_next_judging_on_the_gpu_is_ac(cuda, gpu_sandbox,
                                                                    vector_add):
    result = judge(vector_add, HUNG_CU, cuda, gpu_sandbox)
    assert result.verdict is Verdict.TLE, result.to_dict()
    assert result.applied.get("gpu_released", True), result.flags
    after = judge(vector_add, TEMPLATE, cuda, gpu_sandbox)
    assert after.verdict is Verdict.AC, after.to_dict()


@pytest.mark.parametrize("fuse", ["1", "2"], ids=["whole-batch", "pairs"])
def test_a_batch_fused_across_its_calls_computes_on_inputs_not_yet_there(cuda, gpu_sandbox,
                                                                          softmax, fuse):
    """Issue 42: the first call of a batch (or of each pair) computes its successors' softmax in
    the same launch, from a table of the slots' device buffers kept from earlier turns. Each
    call's inputs are copied there only once the call before it is done (the judge's release):
    the fused calls read the last round's and are wrong; the same kernel unfused is AC."""
    honest = judge(softmax, FUSED_SOFTMAX_CU.replace("#define FUSE 1", "#define FUSE 0"),
                   cuda, gpu_sandbox)
    assert honest.verdict is Verdict.AC, honest.message
    fused = judge(softmax, FUSED_SOFTMAX_CU.replace("#define FUSE 1", f"#define FUSE {fuse}"),
                  cuda, gpu_sandbox)
    assert fused.verdict is Verdict.WA, fused.message


def test_work_escaping_the_last_synchronize_is_found_before_the_baselines_turn(
        cuda, gpu_sandbox, vector_add):
    """Issue 42: a thread launches ~2 ms of spinning after each call has returned; freezing the
    run stops the thread, not the device. The baseline's harness probes the device before each
    of its turns: those rounds are left out, the result held, and the speedup is the honest
    kernel's (or the timing ends as TLE where the device never idles)."""
    honest = judge(vector_add, TEMPLATE, cuda, gpu_sandbox)
    escaped = judge(vector_add, ESCAPED_WORK_CU, cuda, gpu_sandbox)
    if escaped.verdict is Verdict.TLE:
        assert "busy" in (escaped.message + "".join(t.message for t in escaped.tests))
        return
    assert escaped.verdict is Verdict.AC, escaped.message
    assert escaped.applied.get("device_busy_rounds", 0) > 0, escaped.applied
    assert any(h["by"] == "device" for h in escaped.holds), escaped.holds
    assert escaped.speedup <= 1.1 * honest.speedup, (escaped.speedup, honest.speedup)
