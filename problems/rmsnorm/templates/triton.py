import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < hidden
    x = tl.load(x_ptr + row * hidden + offsets, mask=mask, other=0.0).to(tl.float32)
    rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / hidden + eps)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * hidden + offsets, (x * rms * w).to(tl.float16), mask=mask)


def run_kernel(x, weight, y, rows, hidden, eps):
    rmsnorm_kernel[(rows,)](x, weight, y, hidden, eps, BLOCK=triton.next_power_of_2(hidden))
