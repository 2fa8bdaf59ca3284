import torch

FP8_MAX = 448.0  # the largest finite float8_e4m3fn


def quantize(x, block):
    """float8_e4m3fn elements and one float32 scale per block (its absolute maximum maps to the
    largest fp8 value), as DeepSeek-V3's fp8 training quantizes activations and weights."""
    rows, cols = x.shape
    br, bc = block
    padded = torch.nn.functional.pad(x, (0, -cols % bc, 0, -rows % br))
    blocks = padded.reshape(padded.shape[0] // br, br, padded.shape[1] // bc, bc)
    scale = blocks.abs().amax(dim=(1, 3)).clamp_min(1e-12) / FP8_MAX
    q = (blocks / scale[:, None, :, None]).reshape(padded.shape)[:rows, :cols]
    return q.to(torch.float8_e4m3fn), scale.float()


def dequantize(q, scale, block):
    s = scale.double().repeat_interleave(block[0], 0).repeat_interleave(block[1], 1)
    return q.double() * s[:q.shape[0], :q.shape[1]]


def make_inputs(params, generator, device):
    m, n, k = params["m"], params["n"], params["k"]
    spread = k ** -0.25  # outputs of order 1
    x = torch.randn(m, k, generator=generator, device=device) * spread
    w = torch.randn(n, k, generator=generator, device=device) * spread
    a, a_scale = quantize(x, (1, 128))
    b, b_scale = quantize(w, (128, 128))
    return {"a": a, "b": b, "a_scale": a_scale, "b_scale": b_scale}


def reference(a, b, a_scale, b_scale, m, n, k):
    product = dequantize(a, a_scale, (1, 128)) @ dequantize(b, b_scale, (128, 128)).T
    return {"c": product.to(torch.bfloat16)}
