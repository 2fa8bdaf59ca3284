# expect: WA
# timing: yes
# backends: bwrap
# calls: n1048576 11
# threat: warm-up detection aimed where the judge checks least: a timed call's outputs are checked in a uniform draw whose size falls with the output's bytes (8 calls at vector_add's 4 MB point), so the work is skipped, outputs left as the judge poisoned them, in one call in four of the large point's timed calls only (one in sixteen gained 6 % and passed the old judge 60 % of the time, (15/16)^8, but a loaded machine times as few as 11 calls there, which one in sixteen may miss altogether: then the judging is honest and its AC right)
import torch

calls = [0]
at_size = {}  # calls made at each size: the first (up to 8) are the checked sets


def run_kernel(a, b, c, n):
    calls[0] += 1
    at_size[n] = at_size.get(n, 0) + 1
    if n >= 1 << 20 and at_size[n] > 8 and calls[0] % 4 == 0:
        return
    torch.add(a, b, out=c)
