import triton  # noqa: F401


def run_kernel(x, y, rows, cols):
    y[rows + 5, 0] = 1.0  # IndexError
