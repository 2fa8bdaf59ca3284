import torch
import triton  # noqa: F401


def run_kernel(q, kv_cache, seq_lens, out, batch, heads, max_seq, scale):
    for b in range(batch):
        kv = kv_cache[b, : int(seq_lens[b])].float()
        probs = torch.softmax(q[b].float() @ kv.T * scale, dim=-1)
        out[b] = (probs @ kv[:, :512]).bfloat16()
