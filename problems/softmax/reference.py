import torch


def make_inputs(params, generator, device):
    rows, cols = params["rows"], params["cols"]
    x = 4 * torch.randn(rows, cols, generator=generator, device=device)
    x[::3] += 80.0  # overflows exp() unless the row maximum is subtracted
    return {"x": x}


def reference(x, rows, cols):
    return {"y": torch.softmax(x.double(), dim=1).float()}
