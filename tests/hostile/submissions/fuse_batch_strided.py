# expect: AC
# problem: softmax
# timing: yes
# backends: bwrap
# control: baseline.py
# gain: none
# flag: batch
# threat: batch fusion through the shared mapping (issue 42): every call's inputs are staged, and every output is mapped, before the turn starts, one slot stride apart; the first call of a batch views all of them as one strided tensor and computes the whole batch in one operator (one dispatch instead of one per call), the later calls return at once. Its reports stay true (one heavy call, near-empty ones)
import sys

import torch


def run_kernel(x, y, rows, cols):
    bound = sys._getframe(1).f_locals.get("bound")  # the timed batch's arguments, if timed
    if not isinstance(bound, list) or len(bound) < 2:
        torch.softmax(x, dim=1, out=y)
        return
    (x0, y0, *_), (x1, y1, *_) = bound[0], bound[1]
    if x.data_ptr() != x0.data_ptr():
        return  # computed by the batch's first call
    size = (len(bound), rows, cols)
    xs = torch.as_strided(x0, size, ((x1.data_ptr() - x0.data_ptr()) // 4, cols, 1))
    ys = torch.as_strided(y0, size, ((y1.data_ptr() - y0.data_ptr()) // 4, cols, 1))
    ys.copy_(torch.softmax(xs, dim=2))
