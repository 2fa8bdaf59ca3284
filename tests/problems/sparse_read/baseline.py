import time


def run_kernel(x, y, n, us):
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass
    y.copy_(x[:1])
