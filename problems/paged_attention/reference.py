import math

import torch


def make_inputs(params, generator, device):
    batch, heads, kv_heads, head_dim, block_size, max_blocks = (
        params[k] for k in ("batch", "heads", "kv_heads", "head_dim", "block_size", "max_blocks"))
    max_len = max_blocks * block_size
    seq_lens = torch.randint(1, max_len + 1, (batch,), generator=generator, device=device)
    seq_lens[0] = max_len
    table = torch.randperm(batch * max_blocks, generator=generator, device=device)
    shape = (batch * max_blocks, block_size, kv_heads, head_dim)
    return {
        "q": torch.randn(batch, heads, head_dim, generator=generator, device=device).half(),
        "k_cache": torch.randn(*shape, generator=generator, device=device).half(),
        "v_cache": torch.randn(*shape, generator=generator, device=device).half(),
        "block_table": table.view(batch, max_blocks).int(),
        "seq_lens": seq_lens.int(),
    }


def gather(cache, block_table):
    """[batch, max_blocks * block_size, kv_heads, head_dim]: each sequence's pages in order."""
    pages = cache[block_table.long()]  # batch, max_blocks, block_size, kv_heads, head_dim
    return pages.flatten(1, 2)


def reference(q, k_cache, v_cache, block_table, seq_lens, batch, heads, kv_heads, head_dim,
              block_size, max_blocks, scale):
    group = heads // kv_heads
    k = gather(k_cache, block_table).double()  # batch, len, kv_heads, head_dim
    v = gather(v_cache, block_table).double()
    qg = q.double().view(batch, kv_heads, group, head_dim)  # query head h reads KV head h // group
    scores = torch.einsum("bkgd,blkd->bkgl", qg, k) / math.sqrt(head_dim)
    positions = torch.arange(k.shape[1], device=q.device)
    scores = scores.masked_fill(positions >= seq_lens.long()[:, None, None, None], -math.inf)
    out = torch.einsum("bkgl,blkd->bkgd", torch.softmax(scores, dim=-1), v)
    return {"out": out.reshape(batch, heads, head_dim).half()}
