# expect: AC
# timing: yes
# backends: bwrap
# control: baseline.py
# threat: the judge's clock runs from its own stamps of each request (written, and the reply read by its reader thread), which travel beside the reply under a key no JSON object can hold: a harness patched to add `sent_at`/`received_at` fields claiming a round trip of a microsecond claims nothing (on the CPU device the run's CPU time would charge the work anyway; on a GPU only the stamps' origin stops it)
import sys

import torch

_channel = sys.modules["__main__"].Channel
_reply = _channel.reply


def _forged(self, **message):
    _reply(self, **message, sent_at=0.0, received_at=1e-6)


_channel.reply = _forged


def run_kernel(a, b, c, n):
    torch.add(a, b, out=c)
