import torch

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def make_inputs(params, generator, device):
    """Values the format holds exactly: fp4 grid points times a power-of-two scale per block
    of 16, each block reaching 6 x its scale (so that amax / 6 is the scale itself)."""
    m, k = params["m"], params["k"]
    codes = torch.randint(0, 8, (m, k), generator=generator, device=device)
    signs = torch.randint(0, 2, (m, k), generator=generator, device=device) * 2 - 1
    grid = E2M1.to(device)[codes] * signs
    grid.view(m, k // 16, 16)[:, :, 0] = 6.0
    exponents = torch.randint(-6, 6, (m, k // 16), generator=generator, device=device)
    scale = torch.pow(2.0, exponents.float()).repeat_interleave(16, dim=1)
    return {"x": (grid * scale).float()}


def reference(x, m, k):
    blocks = x.view(m, k // 16, 16)
    scale = blocks.abs().amax(dim=2) / 6.0
    elements = (blocks / scale[:, :, None]).reshape(m, k)
    codes = (elements.abs()[:, :, None] - E2M1).abs().argmin(dim=2) | ((elements < 0).long() << 3)
    codes = codes.to(torch.uint8).view(m, k // 2, 2)
    packed = codes[:, :, 0] | (codes[:, :, 1] << 4)  # the first value in the low nibble
    return {"q": packed.view(torch.float4_e2m1fn_x2), "q_scale": scale.to(torch.float8_e4m3fn)}
