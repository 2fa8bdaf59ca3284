#include <cfloat>
#include <cuda_bf16.h>

// One warp per (sequence, head), one token at a time with an online softmax: lane l holds
// dimensions l, l + 32, ... of the query (18 of 576) and of the output (16 of 512).
__global__ void mla_decode_kernel(const __nv_bfloat16* q, const __nv_bfloat16* kv_cache,
                                  const int* seq_lens, __nv_bfloat16* out, int heads, int max_seq,
                                  float scale) {
    int b = blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
    const __nv_bfloat16* qh = q + ((long)b * heads + h) * 576;
    float qv[18], acc[16];
    for (int i = 0; i < 18; ++i) qv[i] = __bfloat162float(qh[lane + 32 * i]) * scale;
    for (int i = 0; i < 16; ++i) acc[i] = 0.f;
    float m = -FLT_MAX, total = 0.f;
    int len = seq_lens[b];
    for (int t = 0; t < len; ++t) {
        const __nv_bfloat16* row = kv_cache + ((long)b * max_seq + t) * 576;
        float kv[18], dot = 0.f;
        for (int i = 0; i < 18; ++i) {
            kv[i] = __bfloat162float(row[lane + 32 * i]);
            dot += qv[i] * kv[i];
        }
        for (int offset = 16; offset > 0; offset >>= 1) dot += __shfl_xor_sync(0xffffffff, dot, offset);
        float m_new = fmaxf(m, dot), correction = __expf(m - m_new), p = __expf(dot - m_new);
        for (int i = 0; i < 16; ++i) acc[i] = acc[i] * correction + p * kv[i];  // latents = values
        total = total * correction + p;
        m = m_new;
    }
    __nv_bfloat16* oh = out + ((long)b * heads + h) * 512;
    for (int i = 0; i < 16; ++i) oh[lane + 32 * i] = __float2bfloat16(acc[i] / total);
}

extern "C" void run_kernel(const __nv_bfloat16* q, const __nv_bfloat16* kv_cache, const int* seq_lens,
                           __nv_bfloat16* out, int batch, int heads, int max_seq, float scale) {
    mla_decode_kernel<<<dim3(batch, heads), 32>>>(q, kv_cache, seq_lens, out, heads, max_seq, scale);
}
