from utils import verbose_allequal
import torch
from task import input_t, output_t


def ref_kernel(data: input_t) -> output_t:
    data, output = data
    output[...] = torch.bincount(data.to(torch.int64), minlength=256).to(torch.int32)
    return output


def generate_input(size: int, contention: int, seed: int) -> input_t:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    hot = torch.randint(0, 256, (1,), device="cuda", dtype=torch.int64, generator=gen)
    data = torch.randint(0, 256, (size,), device="cuda", dtype=torch.int64, generator=gen)
    busy = torch.rand((size,), device="cuda", generator=gen) < contention / 100
    data[busy] = hot
    output = torch.empty(256, device="cuda", dtype=torch.int32)
    return data.to(torch.uint8), output


def check_implementation(data, output):
    expected = ref_kernel(data)
    reasons = verbose_allequal(output, expected)
    if len(reasons) > 0:
        return False, "mismatch found! custom implementation doesn't match reference: " + reasons[0]
    return True, ''
