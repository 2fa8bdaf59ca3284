from utils import make_match_reference
import torch
import torch.nn.functional as F
from task import input_t, output_t


def ref_kernel(data: input_t) -> output_t:
    x, kernel, output = data
    output[...] = F.conv2d(x, kernel)
    return output


def generate_input(size: int, kernelsize: int, channels: int, batch: int, seed: int) -> input_t:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.randn(batch, channels, size, size, device="cuda", generator=gen)
    kernel = torch.randn(channels, channels, kernelsize, kernelsize, device="cuda", generator=gen)
    out = size - kernelsize + 1
    output = torch.empty(batch, channels, out, out, device="cuda")
    return x, kernel, output


check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)
