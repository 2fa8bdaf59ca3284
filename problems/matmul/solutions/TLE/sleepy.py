import time

import triton  # noqa: F401


def run_kernel(a, b, c, m, n, k):
    time.sleep(60)
