# expect: WA
# timing: yes
# backends: bwrap
# threat: stale outputs reused, quietly: in one call in sixteen of vector_add's 4 MB point (8 calls checked there) the previous call's output is copied instead of computed (two thirds of the call's memory traffic), each copy a plausible, unpoisoned, non-constant output; the judge before this check let it through 60 % of the time
import torch

calls = [0]
last = {}


def run_kernel(a, b, c, n):
    calls[0] += 1
    if n >= 1 << 20 and calls[0] > 50 and calls[0] % 16 == 0 and n in last:
        c.copy_(last[n])
        return
    torch.add(a, b, out=c)
    if n >= 1 << 20 and calls[0] % 16 == 15:
        last[n] = c.clone()  # kept only before a skipped call: the clone costs once in sixteen
