#include <cfloat>
#include <cuda_fp16.h>

// One warp per (sequence, query head), online softmax over the tokens; each lane holds
// head_dim / 32 of the query and of the output (head_dim a multiple of 32, at most 256).
constexpr int MAX_PER_LANE = 8;

__global__ void paged_decode_kernel(const __half* q, const __half* k_cache, const __half* v_cache,
                                    const int* block_table, const int* seq_lens, __half* out,
                                    int heads, int kv_heads, int head_dim, int block_size,
                                    int max_blocks, float scale) {
    int b = blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
    int kv_head = h / (heads / kv_heads), per_lane = head_dim / 32;
    const __half* qh = q + ((long)b * heads + h) * head_dim;
    float qv[MAX_PER_LANE], acc[MAX_PER_LANE];
    for (int i = 0; i < per_lane; ++i) {
        qv[i] = __half2float(qh[lane + 32 * i]) * scale;
        acc[i] = 0.f;
    }
    float m = -FLT_MAX, total = 0.f;
    int len = seq_lens[b];
    for (int t = 0; t < len; ++t) {
        long block = block_table[(long)b * max_blocks + t / block_size];
        long base = ((block * block_size + t % block_size) * kv_heads + kv_head) * head_dim;
        float dot = 0.f;
        for (int i = 0; i < per_lane; ++i) dot += qv[i] * __half2float(k_cache[base + lane + 32 * i]);
        for (int offset = 16; offset > 0; offset >>= 1) dot += __shfl_xor_sync(0xffffffff, dot, offset);
        float m_new = fmaxf(m, dot), correction = __expf(m - m_new), p = __expf(dot - m_new);
        for (int i = 0; i < per_lane; ++i)
            acc[i] = acc[i] * correction + p * __half2float(v_cache[base + lane + 32 * i]);
        total = total * correction + p;
        m = m_new;
    }
    __half* oh = out + ((long)b * heads + h) * head_dim;
    for (int i = 0; i < per_lane; ++i) oh[lane + 32 * i] = __float2half(acc[i] / total);
}

extern "C" void run_kernel(const __half* q, const __half* k_cache, const __half* v_cache,
                           const int* block_table, const int* seq_lens, __half* out, int batch,
                           int heads, int kv_heads, int head_dim, int block_size, int max_blocks,
                           float scale) {
    paged_decode_kernel<<<dim3(batch, heads), 32>>>(q, k_cache, v_cache, block_table, seq_lens, out,
                                                    heads, kv_heads, head_dim, block_size,
                                                    max_blocks, scale);
}
