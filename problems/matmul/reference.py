import torch


def make_inputs(params, generator, device):
    m, n, k = params["m"], params["n"], params["k"]
    return {
        "a": torch.randn(m, k, generator=generator, device=device),
        "b": torch.randn(k, n, generator=generator, device=device),
    }


def reference(a, b, m, n, k):
    return {"c": (a.double() @ b.double()).float()}
