# expect: WA
# problem: softmax
# timing: yes
# backends: bwrap
# threat: batch fusion through the shared mapping (issue 42): where every call's inputs were staged before the turn, one slot stride apart, the first call of a batch viewed them all as one strided tensor and computed the whole batch in one operator (one dispatch instead of one per call), the later calls returned at once, and the last call evened out the harness's reports (one heavy call beside near-empty ones was held as lopsided): accepted, unflagged, on the judge before the release. Each call's inputs now arrive only once the call before it is done: the first call computes the later ones from what their slots held before, and is wrong
import sys

import torch


def run_kernel(x, y, rows, cols):
    bound = sys._getframe(1).f_locals.get("bound")  # the timed batch's arguments, if timed
    if not isinstance(bound, list) or len(bound) < 2:
        torch.softmax(x, dim=1, out=y)
        return
    (x0, y0, *_), (x1, y1, *_) = bound[0], bound[1]
    if x.data_ptr() != x0.data_ptr():
        if x.data_ptr() == bound[-1][0].data_ptr():
            _even_out(bound)
        return  # computed by the batch's first call
    size = (len(bound), rows, cols)
    xs = torch.as_strided(x0, size, ((x1.data_ptr() - x0.data_ptr()) // 4, cols, 1))
    ys = torch.as_strided(y0, size, ((y1.data_ptr() - y0.data_ptr()) // 4, cols, 1))
    ys.copy_(torch.softmax(xs, dim=2))


def _even_out(bound):
    """In the batch's last call: the reports so far made equal (their sum, the clock's, kept)."""
    times = sys._getframe(2).f_locals.get("times")
    if isinstance(times, list) and times:
        times[:] = [sum(times) / len(bound)] * len(times)
