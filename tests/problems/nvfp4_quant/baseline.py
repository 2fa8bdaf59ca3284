import torch

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def run_kernel(x, q, q_scale, m, k):
    blocks = x.view(m, k // 16, 16)
    scale = blocks.abs().amax(dim=2) / 6.0
    elements = (blocks / scale[:, :, None]).reshape(m, k)
    codes = (elements.abs()[:, :, None] - E2M1).abs().argmin(dim=2) | ((elements < 0).long() << 3)
    codes = codes.to(torch.uint8).view(m, k // 2, 2)
    q.view(torch.uint8).copy_(codes[:, :, 0] | (codes[:, :, 1] << 4))
    q_scale.copy_(scale.to(torch.float8_e4m3fn))
