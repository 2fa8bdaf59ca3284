"""The stages of one judging, in the order judge/judging/pipeline.py runs them: `start` the
contenders (the submission's and the baseline's harnesses), `check` every test point's outputs,
`profile` one call where asked, `timed`: time the submission against the baseline, `score`: what
each point is charged and the judging's score. Each stage is plain functions over the judging's
shared state (judge/judging/context.py)."""
