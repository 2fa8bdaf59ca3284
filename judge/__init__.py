"""kernel-judge: the trusted side (problems, pipeline, CLI). The untrusted harness is judge.harness."""

__version__ = "0.1.0"
