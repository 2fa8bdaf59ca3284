"""One judging, trusted side: the run (pipeline.py) of its stages (stages/: start the
contenders, check, profile, time, score) over its shared state (context.py, contender.py), the
warm sandboxed harnesses it drives (warm.py), rules, the reference runner, the record
(record.py) and its rendering (report.py). The timing itself is the measurement engine's
(judge/measure). Contestant code never runs in this process: only in the harness
(judge/harness), in a sandbox."""
