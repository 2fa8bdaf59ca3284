# expect: WA
# timing: yes
# backends: bwrap
# threat: warm-up detection's quiet form: do the work in the checked calls and in most timed ones, skip it (outputs left as the judge poisoned them) in one call in forty from then on; the old judge checked 8 timed calls per point (24 here) and let this through about every other time (0.975^24)
import torch

calls = [0]


def run_kernel(a, b, c, n):
    calls[0] += 1
    if calls[0] > 50 and calls[0] % 40 == 0:
        return
    torch.add(a, b, out=c)
