import torch


def make_inputs(params, generator, device):
    tokens, hidden, inter, experts = (params[k] for k in ("tokens", "hidden", "inter", "experts"))

    def normal(*shape, std=1.0):
        return std * torch.randn(*shape, generator=generator, device=device)

    return {
        "x": normal(tokens, hidden).half(),
        "router_logits": normal(tokens, experts),
        "w1": normal(experts, 2 * inter, hidden, std=hidden ** -0.5).half(),
        "w2": normal(experts, hidden, inter, std=inter ** -0.5).half(),
    }


def route(router_logits, topk):
    """Top-k of the softmax, renormalized; torch.topk on distinct random values has no ties."""
    probs = torch.softmax(router_logits.double(), dim=1)
    weights, ids = torch.topk(probs, topk, dim=1)
    return weights / weights.sum(dim=1, keepdim=True), ids


def reference(x, router_logits, w1, w2, tokens, hidden, inter, experts, topk):
    weights, ids = route(router_logits, topk)
    xd = x.double()
    y = torch.zeros(tokens, hidden, dtype=torch.float64, device=x.device)
    for e in range(experts):
        rows, slots = (ids == e).nonzero(as_tuple=True)
        if rows.numel() == 0:
            continue
        gate_up = xd[rows] @ w1[e].double().T
        h = torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:]
        y.index_add_(0, rows, (h @ w2[e].double().T) * weights[rows, slots, None])
    return {"y": y.half()}
