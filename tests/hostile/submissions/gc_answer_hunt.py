# expect: WA
# problem: softmax
# timing: yes
# backends: bwrap
# threat: gc introspection, as on boards whose reference runs in the contestant's process: hunt the garbage collector's objects for a tensor shaped like the output that is not an argument (the expected answer, a cached result) and copy it instead of computing; here the reference and the expected outputs never enter the run's process, so all it finds is other calls' inputs and outputs (this lost on the code before batches too)
import gc

import torch


def run_kernel(x, y, rows, cols):
    for obj in gc.get_objects():
        if (isinstance(obj, torch.Tensor) and obj.shape == y.shape and obj.dtype == y.dtype
                and obj.data_ptr() not in (x.data_ptr(), y.data_ptr())
                and bool(torch.isfinite(obj).all()) and bool((obj >= 0).all())
                and bool(torch.allclose(obj.sum(dim=1), torch.ones(rows)))):
            y.copy_(obj)  # rows summing to one: looks like a softmax's answer
            return
    y.copy_(x)  # nothing found: a wrong answer rather than the work
