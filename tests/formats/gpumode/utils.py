# A trimmed copy of gpu-mode/reference-kernels problems/pmpp/utils.py, for the importer's tests.
import random

import torch


def set_seed(seed=42):
    random.seed(seed)
    torch.manual_seed(seed)


def verbose_allclose(received, expected, rtol=1e-05, atol=1e-08, max_print=5) -> list[str]:
    if received.shape != expected.shape:
        return ["SIZE MISMATCH"]
    diff = torch.abs(received.to(torch.float32) - expected.to(torch.float32))
    tolerance = atol + rtol * torch.abs(expected)
    mismatched = diff > tolerance
    count = int(mismatched.sum().item())
    return [f"Number of mismatched elements: {count}"] if count else []


def verbose_allequal(received, expected, max_print=5) -> list[str]:
    count = int(torch.not_equal(received, expected).sum().item())
    return [f"Number of mismatched elements: {count}"] if count else []


def match_reference(data, output, reference: callable, rtol=1e-05, atol=1e-08):
    expected = reference(data)
    reasons = verbose_allclose(output, expected, rtol=rtol, atol=atol)
    if len(reasons) > 0:
        return "mismatch found! custom implementation doesn't match reference: " + reasons[0]
    return ''


def make_match_reference(reference: callable, **kwargs):
    def wrapped(data, output):
        return match_reference(data, output, reference=reference, **kwargs)
    return wrapped
