import torch


def run_kernel(x, router_logits, w1, w2, y, tokens, hidden, inter, experts, topk):
    probs = torch.softmax(router_logits, dim=1)
    weights, ids = torch.topk(probs, topk, dim=1)
    weights = (weights / weights.sum(dim=1, keepdim=True)).to(x.dtype)
    out = torch.zeros(tokens, hidden, dtype=torch.float32, device=x.device)
    for e in range(experts):
        rows, slots = (ids == e).nonzero(as_tuple=True)
        if rows.numel() == 0:
            continue
        gate_up = x[rows] @ w1[e].T
        h = torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:]
        out.index_add_(0, rows, ((h @ w2[e].T) * weights[rows, slots, None]).float())
    y.copy_(out)
