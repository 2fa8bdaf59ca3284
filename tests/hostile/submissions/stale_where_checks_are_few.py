# expect: WA
# timing: yes
# backends: bwrap
# calls: n1048576 11
# threat: stale outputs reused, quietly: in one call in four of vector_add's 4 MB point (8 calls checked there; one in four so that a copy lands among the point's timed calls even where a loaded machine times only 11) the previous call's output is copied instead of computed (two thirds of the call's memory traffic), each copy a plausible, unpoisoned, non-constant output; at one in sixteen the judge before this check let it through 60 % of the time
import torch

calls = [0]
at_size = {}  # calls made at each size: the first (up to 8) are the checked sets
last = {}


def run_kernel(a, b, c, n):
    calls[0] += 1
    at_size[n] = at_size.get(n, 0) + 1
    # only the call just before's (the one the judge promises to compare with): an older one,
    # such as this point's checked call, is found by the draw alone (SECURITY.md)
    if n >= 1 << 20 and at_size[n] > 8 and calls[0] % 4 == 0 and last.get(n, (0,))[0] == calls[0] - 1:
        c.copy_(last[n][1])
        return
    torch.add(a, b, out=c)
    if n >= 1 << 20 and calls[0] % 4 == 3:
        last[n] = (calls[0], c.clone())  # kept only before a copied call: once in four
