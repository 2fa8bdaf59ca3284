import torch


def make_inputs(params, generator, device):
    return {"x": torch.randint(0, 1 << 30, (params["n"],), generator=generator, device=device,
                               dtype=torch.int32)}


def reference(x, n, us):
    return {"y": x[:1].clone()}
