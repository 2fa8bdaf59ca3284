# expect: WA
# timing: yes
# backends: bwrap
# calls: n1048576 11
# threat: the quiet skip, outputs filled instead of computed: in one call in four of vector_add's 4 MB point (8 calls checked there; one in four so that a skip lands among the point's timed calls even where a loaded machine times only 11) the output is zeroed, a write of a third of the call's memory traffic, so that no poison is left for the judge to find; at one in sixteen the judge before this check let it through 60 % of the time
import torch

calls = [0]
at_size = {}  # calls made at each size: the first (up to 8) are the checked sets


def run_kernel(a, b, c, n):
    calls[0] += 1
    at_size[n] = at_size.get(n, 0) + 1
    if n >= 1 << 20 and at_size[n] > 8 and calls[0] % 4 == 0:
        c.zero_()
        return
    torch.add(a, b, out=c)
