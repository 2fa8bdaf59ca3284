import math

import torch

LATENT = 512


def make_inputs(params, generator, device):
    batch, heads, max_seq = params["batch"], params["heads"], params["max_seq"]
    seq_lens = torch.randint(1, max_seq + 1, (batch,), generator=generator, device=device)
    seq_lens[0] = max_seq
    kv = torch.randn(batch, max_seq, 576, generator=generator, device=device)
    beyond = torch.arange(max_seq, device=device)[None, :] >= seq_lens[:, None]
    kv[beyond] = 1e4  # garbage past the end: it must not be read into the result
    return {
        "q": torch.randn(batch, heads, 576, generator=generator, device=device).bfloat16(),
        "kv_cache": kv.bfloat16(),
        "seq_lens": seq_lens.int(),
    }


def reference(q, kv_cache, seq_lens, batch, heads, max_seq, scale):
    kv = kv_cache.double()
    scores = torch.einsum("bhd,bld->bhl", q.double(), kv) / math.sqrt(192)
    positions = torch.arange(max_seq, device=q.device)
    scores = scores.masked_fill(positions[None, None, :] >= seq_lens.long()[:, None, None], -math.inf)
    out = torch.einsum("bhl,bld->bhd", torch.softmax(scores, dim=-1), kv[..., :LATENT])
    return {"out": out.bfloat16()}
