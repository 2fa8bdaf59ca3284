import torch


def run_kernel(q, k_cache, v_cache, block_table, seq_lens, out, batch, heads, kv_heads, head_dim,
               block_size, max_blocks, scale):
    group = heads // kv_heads
    k = k_cache[block_table.long()].flatten(1, 2).transpose(1, 2)  # batch, kv, len, d
    v = v_cache[block_table.long()].flatten(1, 2).transpose(1, 2)
    qg = q.view(batch, kv_heads, group, head_dim)
    scores = torch.matmul(qg, k.transpose(-1, -2)).float() * scale  # batch, kv, group, len
    positions = torch.arange(k.shape[2], device=q.device)
    scores.masked_fill_(positions >= seq_lens.long()[:, None, None, None], float("-inf"))
    probs = torch.softmax(scores, dim=-1).half()
    out.copy_(torch.matmul(probs, v).view(batch, heads, head_dim))
