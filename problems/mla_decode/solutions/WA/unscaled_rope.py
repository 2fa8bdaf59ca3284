# Scales the 512 latent dimensions of the query but not the 64 rotary ones.
import triton
import triton.language as tl


@triton.jit
def mla_decode_kernel(q_ptr, kv_cache_ptr, seq_lens_ptr, out_ptr, heads, max_seq, scale,
                      BLOCK_N: tl.constexpr):
    """One program per (sequence, head), BLOCK_N tokens at a time, online softmax."""
    b = tl.program_id(0)
    h = tl.program_id(1)
    latent = tl.arange(0, 512)
    rope = 512 + tl.arange(0, 64)
    q_row = q_ptr + (b * heads + h) * 576
    q_latent = tl.load(q_row + latent).to(tl.float32) * scale
    q_rope = tl.load(q_row + rope).to(tl.float32)  # the bug: the rope part is not scaled
    seq_len = tl.load(seq_lens_ptr + b)
    m = tl.full((), -float("inf"), tl.float32)
    total = tl.zeros((), dtype=tl.float32)
    acc = tl.zeros((512,), dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        tokens = start + tl.arange(0, BLOCK_N)
        valid = tokens < seq_len
        rows = kv_cache_ptr + (b * max_seq + tokens[:, None]).to(tl.int64) * 576
        c = tl.load(rows + latent[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        r = tl.load(rows + rope[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        scores = tl.sum(c * q_latent[None, :], axis=1) + tl.sum(r * q_rope[None, :], axis=1)
        scores = tl.where(valid, scores, -float("inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=0))
        p = tl.exp(scores - m_new)
        correction = tl.exp(m - m_new)
        acc = acc * correction + tl.sum(p[:, None] * c, axis=0)  # the latents are the values
        total = total * correction + tl.sum(p, axis=0)
        m = m_new
    tl.store(out_ptr + (b * heads + h) * 512 + latent, (acc / total).to(tl.bfloat16))


def run_kernel(q, kv_cache, seq_lens, out, batch, heads, max_seq, scale):
    mla_decode_kernel[(batch, heads)](q, kv_cache, seq_lens, out, heads, max_seq, scale, BLOCK_N=16)
