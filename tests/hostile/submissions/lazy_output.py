# expect: WA
# problem: matmul
# timing: yes
# threat: turn the output into a lazy tensor subclass that computes only when the harness reads it back, after the clock stopped
import torch


class Lazy(torch.Tensor):
    def detach(self):
        a, b = self.operands
        torch.mm(a, b, out=self.as_subclass(torch.Tensor))
        return self.as_subclass(torch.Tensor).detach()


def run_kernel(a, b, c, m, n, k):
    c.__class__ = Lazy
    c.operands = (a, b)
