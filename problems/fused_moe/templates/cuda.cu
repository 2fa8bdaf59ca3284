#include <cfloat>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// A straightforward fused MoE: one thread routes a token, one warp computes one output row of each
// expert GEMV. Scratch (expert ids, weights, h) is kept between calls and grown when needed.
constexpr int MAX_TOPK = 16;
constexpr int WARPS = 8;

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
    return v;
}

__global__ void route_kernel(const float* logits, int* ids, float* weights, int tokens, int experts,
                             int topk) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens) return;
    const float* row = logits + (long)t * experts;
    float m = -FLT_MAX, sum = 0.f;
    for (int e = 0; e < experts; ++e) m = fmaxf(m, row[e]);
    for (int e = 0; e < experts; ++e) sum += expf(row[e] - m);
    int chosen[MAX_TOPK];
    float picked[MAX_TOPK], total = 0.f;
    for (int j = 0; j < topk; ++j) {
        int best = -1;
        for (int e = 0; e < experts; ++e) {
            bool taken = false;
            for (int i = 0; i < j; ++i) taken |= chosen[i] == e;
            if (!taken && (best < 0 || row[e] > row[best])) best = e;
        }
        chosen[j] = best;
        picked[j] = expf(row[best] - m) / sum;
        total += picked[j];
    }
    for (int j = 0; j < topk; ++j) {
        ids[t * topk + j] = chosen[j];
        weights[t * topk + j] = picked[j] / total;
    }
}

// grid (tokens * topk, ceil(inter / WARPS)): h[slot, r] = silu(W_g[r] . x) * (W_u[r] . x)
__global__ void expert_up_kernel(const __half* x, const __half* w1, const int* ids, float* h,
                                 int hidden, int inter, int topk) {
    int slot = blockIdx.x, r = blockIdx.y * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= inter) return;
    const __half* xt = x + (long)(slot / topk) * hidden;
    const __half* wg = w1 + ((long)ids[slot] * 2 * inter + r) * hidden;
    const __half* wu = wg + (long)inter * hidden;
    float gate = 0.f, up = 0.f;
    for (int c = lane; c < hidden; c += 32) {
        float xv = __half2float(xt[c]);
        gate += __half2float(wg[c]) * xv;
        up += __half2float(wu[c]) * xv;
    }
    gate = warp_sum(gate);
    up = warp_sum(up);
    if (lane == 0) h[(long)slot * inter + r] = gate / (1.f + expf(-gate)) * up;
}

// grid (tokens, ceil(hidden / WARPS)): y[t, r] = sum_j g_j * (W2[e_j][r] . h_j)
__global__ void expert_down_kernel(const float* h, const __half* w2, const int* ids,
                                   const float* weights, __half* y, int hidden, int inter, int topk) {
    int t = blockIdx.x, r = blockIdx.y * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= hidden) return;
    float acc = 0.f;
    for (int j = 0; j < topk; ++j) {
        int slot = t * topk + j;
        const __half* w = w2 + ((long)ids[slot] * hidden + r) * inter;
        const float* hs = h + (long)slot * inter;
        float part = 0.f;
        for (int c = lane; c < inter; c += 32) part += __half2float(w[c]) * hs[c];
        acc += weights[slot] * warp_sum(part);
    }
    if (lane == 0) y[(long)t * hidden + r] = __float2half(acc);
}

template <typename T>
static T* scratch(T*& buffer, size_t& capacity, size_t count) {
    if (count > capacity) {
        cudaFree(buffer);
        cudaMalloc(&buffer, count * sizeof(T));
        capacity = count;
    }
    return buffer;
}

extern "C" void run_kernel(const __half* x, const float* router_logits, const __half* w1,
                           const __half* w2, __half* y, int tokens, int hidden, int inter,
                           int experts, int topk) {
    static int* ids = nullptr;
    static float *weights = nullptr, *h = nullptr;
    static size_t ids_cap = 0, weights_cap = 0, h_cap = 0;
    size_t slots = (size_t)tokens * topk;
    scratch(ids, ids_cap, slots);
    scratch(weights, weights_cap, slots);
    scratch(h, h_cap, slots * inter);
    route_kernel<<<(tokens + 127) / 128, 128>>>(router_logits, ids, weights, tokens, experts, topk);
    expert_up_kernel<<<dim3(slots, (inter + WARPS - 1) / WARPS), WARPS * 32>>>(x, w1, ids, h, hidden,
                                                                             inter, topk);
    expert_down_kernel<<<dim3(tokens, (hidden + WARPS - 1) / WARPS), WARPS * 32>>>(
        h, w2, ids, weights, y, hidden, inter, topk);
}
