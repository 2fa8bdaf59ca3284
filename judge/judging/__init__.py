"""One judging, trusted side: the stages (pipeline.py), the warm sandboxed harnesses it drives
(warm.py), timing (timing.py, flusher.py, shared.py), rules, the reference runner, scoring, the
record (record.py) and its rendering (report.py), and problem self-tests (selftest.py).
Contestant code never runs in this process: only in the harness (judge/harness), in a sandbox."""
