import triton  # noqa: F401


def run_kernel(a, b, c, n):
    raise RuntimeError("this kernel gives up")
