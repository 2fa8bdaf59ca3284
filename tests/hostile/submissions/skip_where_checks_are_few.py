# expect: WA
# timing: yes
# backends: bwrap
# threat: warm-up detection aimed where the judge checks least: a timed call's outputs are checked in a uniform draw whose size falls with the output's bytes (8 calls at vector_add's 4 MB point), so the work is skipped, outputs left as the judge poisoned them, in one call in sixteen of the large point's timed calls only: the old judge let it through 60 % of the time ((15/16)^8), 6 % faster on the point that decides a total-time score
import torch

calls = [0]


def run_kernel(a, b, c, n):
    calls[0] += 1
    if n >= 1 << 20 and calls[0] > 50 and calls[0] % 16 == 0:
        return
    torch.add(a, b, out=c)
