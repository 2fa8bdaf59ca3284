# Reads the pages as if they were laid out in order: ignores the block table.
import triton
import triton.language as tl


@triton.jit
def paged_decode_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_table_ptr, seq_lens_ptr, out_ptr,
                        heads, kv_heads, head_dim, block_size, max_blocks, scale,
                        BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr):
    """One program per (sequence, query head): online softmax over the sequence's pages."""
    b = tl.program_id(0)
    h = tl.program_id(1)
    kv_head = h // (heads // kv_heads)
    dims = tl.arange(0, BLOCK_D)
    slots = tl.arange(0, BLOCK_SIZE)
    q = tl.load(q_ptr + (b * heads + h) * head_dim + dims, mask=dims < head_dim, other=0.0)
    q = q.to(tl.float32) * scale
    seq_len = tl.load(seq_lens_ptr + b)
    row_stride = kv_heads * head_dim  # between slots of a block
    m = -float("inf")
    total = 0.0
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for page in range(0, tl.cdiv(seq_len, block_size)):
        block = (b * max_blocks + page).to(tl.int64)  # the bug: the block table is ignored
        offsets = (block * block_size + slots[:, None]) * row_stride + kv_head * head_dim + dims[None, :]
        valid = (page * block_size + slots < seq_len) & (slots < block_size)
        mask = valid[:, None] & (dims[None, :] < head_dim)
        k = tl.load(k_cache_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        scores = tl.where(valid, tl.sum(k * q[None, :], axis=1), -float("inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=0))
        p = tl.exp(scores - m_new)
        correction = tl.exp(m - m_new)
        v = tl.load(v_cache_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        acc = acc * correction + tl.sum(p[:, None] * v, axis=0)
        total = total * correction + tl.sum(p, axis=0)
        m = m_new
    tl.store(out_ptr + (b * heads + h) * head_dim + dims, (acc / total).to(tl.float16),
             mask=dims < head_dim)


def run_kernel(q, k_cache, v_cache, block_table, seq_lens, out, batch, heads, kv_heads, head_dim,
               block_size, max_blocks, scale):
    paged_decode_kernel[(batch, heads)](
        q, k_cache, v_cache, block_table, seq_lens, out, heads, kv_heads, head_dim, block_size,
        max_blocks, scale, BLOCK_SIZE=triton.next_power_of_2(block_size),
        BLOCK_D=triton.next_power_of_2(head_dim))
