# expect: WA
# problem: softmax
# timing: yes
# backends: bwrap
# threat: batch fusion by introspection (new with batches): the harness's frames hold the timed batch's input sets, all written before it starts, so the first call computes every call's softmax in one operator and the later calls return at once; the outputs are right and the per-call overhead is paid once a batch. It does not pay on the CPU (0.34-0.37x against the baseline's own 0.86x under load here: the frame walk and the concatenation cost more than they save), and its reports, one long call beside near-empty ones, hold it for review. Now each call's inputs arrive only once the call before it is done (the release, issue 42): the first call computes the later ones from what their slots held before, and is wrong
import sys

import torch


def _batch():
    frame = sys._getframe(2)
    while frame is not None:
        batch = getattr(frame.f_locals.get("batch"), "sets", None)  # the prepared batch's sets
        if isinstance(batch, list) and len(batch) > 1 and hasattr(batch[0], "outputs"):
            return batch
        frame = frame.f_back
    return None


def run_kernel(x, y, rows, cols):
    batch = _batch()
    if batch is None:
        torch.softmax(x, dim=1, out=y)
        return
    first = batch[0].inputs["x"]
    if x.data_ptr() != first.data_ptr():
        return  # written by the batch's first call
    out = torch.softmax(torch.cat([s.inputs["x"] for s in batch]), dim=1)
    for done, part in zip(batch, out.split(rows)):
        done.outputs["y"].copy_(part)
