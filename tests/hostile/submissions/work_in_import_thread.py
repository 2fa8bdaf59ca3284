# expect: AC
# problem: matmul
# timing: yes
# control: baseline.py
# threat: a thread started at import watches the judge's input files and computes each answer ahead of the call that asks for it; the call only copies
import glob
import os
import threading
import time

import torch

answers = {}


def key(a):
    flat = a.reshape(-1)
    return tuple(flat[:: max(1, flat.numel() // 17)][:17].tolist())


def roots():
    scratch = os.getcwd()  # .../<job>/submission/scratch
    return ["/kj/inputs", os.path.join(os.path.dirname(os.path.dirname(scratch)), "inputs")]


def ahead():
    seen = {}
    while True:
        for root in roots():
            for path in glob.glob(os.path.join(root, "*", "*.pt")):
                try:
                    stamp = os.stat(path).st_mtime_ns
                    if seen.get(path) == stamp:
                        continue
                    seen[path] = stamp
                    data = torch.load(path, weights_only=True)
                    answers[key(data["a"])] = torch.mm(data["a"], data["b"])
                except Exception:
                    pass
        time.sleep(0.0001)


threading.Thread(target=ahead, daemon=True).start()


def run_kernel(a, b, c, m, n, k):
    found = answers.get(key(a))
    if found is not None and found.shape == c.shape:
        c.copy_(found)
    else:
        torch.mm(a, b, out=c)
