# expect: WA
# timing: yes
# backends: bwrap
# threat: the quiet skip, outputs filled instead of computed: in one call in sixteen of vector_add's 4 MB point (8 calls checked there) the output is zeroed, a write of a third of the call's memory traffic, so that no poison is left for the judge to find; the judge before this check let it through 60 % of the time
import torch

calls = [0]


def run_kernel(a, b, c, n):
    calls[0] += 1
    if n >= 1 << 20 and calls[0] > 50 and calls[0] % 16 == 0:
        c.zero_()
        return
    torch.add(a, b, out=c)
