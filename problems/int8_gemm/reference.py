import torch


def make_inputs(params, generator, device):
    m, n, k = params["m"], params["n"], params["k"]
    a = torch.randint(-128, 128, (m, k), generator=generator, device=device, dtype=torch.int8)
    b = torch.randint(-128, 128, (n, k), generator=generator, device=device, dtype=torch.int8)
    spread = 74.0 * k ** 0.25
    scale_a = (0.5 + torch.rand(m, generator=generator, device=device)) / spread
    scale_b = (0.5 + torch.rand(n, generator=generator, device=device)) / spread
    return {"a": a, "b": b, "scale_a": scale_a, "scale_b": scale_b}


def reference(a, b, scale_a, scale_b, m, n, k):
    exact = a.double() @ b.double().T  # integers below 2^53: exact
    return {"c": (exact * scale_a.double()[:, None] * scale_b.double()[None, :]).half()}
