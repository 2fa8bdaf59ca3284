import torch


def make_inputs(params, generator, device):
    n = params["n"]
    return {
        "a": torch.randn(n, generator=generator, device=device),
        "b": torch.randn(n, generator=generator, device=device),
    }


def reference(a, b, n):
    return {"c": a + b}
