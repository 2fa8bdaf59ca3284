"""KernelGuard (PyPI `kernelguard`, GPU MODE's rule-based hack detector) as an extra opinion on
Python submissions, never a verdict.

Its hits become flags on the record for organizers, with the rule ids; a hit of a rule in its
hard tier puts the judging on the organizers' review list. The verdict stays the judge's own
measurements' (fresh inputs every call, poisoned outputs, the judge's clock): a source the
detector misses is caught there or not at all, and one it flags keeps the verdict it earned.

Configured for this judge: the entry point is run_kernel, the trusted modules and functions are
the harness's (the names are read from its files, so a renamed function stays covered). It reads
untrusted text, so it runs in a child process with a time and memory limit: a pathological
source (nesting deep enough to crash the parser, a regex's worst case) costs the child only.
Run it as `python -m judge.judging.guard` (JSON on stdin: {"source", "overrides"}).
"""

from __future__ import annotations

import ast
import json
import os
import re
import resource
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from pathlib import Path

TIMEOUT_S = 30
MEMORY_BYTES = 2 * 2**30
HARNESS = Path(__file__).parents[1] / "harness"
ENTRY_POINT = "run_kernel"


@dataclass
class GuardReport:
    tool: str = "kernelguard"
    classification: str = ""
    hits: list[dict] = field(default_factory=list)  # {rule, tier, severity, evidence}
    error: str = ""  # why there is no opinion (not installed, timed out)

    @property
    def review(self) -> bool:
        return any(hit["tier"] == "hard" for hit in self.hits)

    def to_dict(self) -> dict:
        return {**asdict(self), "review": self.review}

    @classmethod
    def from_dict(cls, data: dict) -> GuardReport:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})

    def holds(self, source: str) -> list[dict]:
        """The hard-tier hits, each where the source shows it (see `evidence_line`)."""
        return [{"by": self.tool, "what": f"{hit['rule']}: {hit['evidence']}", "test": None,
                 "line": evidence_line(source, hit["evidence"])}
                for hit in self.hits if hit["tier"] == "hard"]

    def flags(self) -> list[str]:
        if self.error:
            return [f"{self.tool}: no opinion ({self.error})"]
        rules = sorted({(hit["tier"], hit["rule"]) for hit in self.hits})
        return [f"{self.tool}: {rule} ({tier} tier{', review' if tier == 'hard' else ''})"
                for tier, rule in rules]


def evidence_line(source: str, evidence: str) -> int | None:
    """The source line (1-based) a hit's evidence names, KernelGuard giving none: the longest
    dotted name of the evidence that the source holds, where it is assigned if it is, else
    where it first appears ("host timing function patched: time.perf_counter" points at
    `time.perf_counter = ...`)."""
    lines = source.splitlines()
    names = sorted(set(re.findall(r"[A-Za-z_][\w.]*\w", evidence)), key=len, reverse=True)
    for name in (n for n in names if len(n) >= 4):
        assigned = re.compile(rf"(?<![\w.]){re.escape(name)}\s*(?:\[[^\]]*\]\s*)?=(?!=)")
        used = re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w])")
        for pattern in (assigned, used):
            found = next((i for i, line in enumerate(lines, 1) if pattern.search(line)), None)
            if found:
                return found
    return None


@cache
def harness_names() -> tuple[list[str], list[str]]:
    """(modules, functions) of the harness, which shares the submission's process: the
    detector treats code that reaches for them as an attack on the evaluator."""
    modules = ["__main__"]
    functions: set[str] = set()
    for path in sorted(HARNESS.glob("*.py")):
        if path.stem == "__init__":
            continue
        modules.append(path.stem)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                functions.add(node.name)
            if isinstance(node, ast.ClassDef):
                functions.update(n.name for n in node.body if isinstance(n, ast.FunctionDef)
                                 and not n.name.startswith("__"))
    return modules, sorted(functions)


def overrides() -> list[str]:
    modules, functions = harness_names()
    return [f"entrypoints.names={json.dumps([ENTRY_POINT])}",
            f"trusted.modules={json.dumps(modules)}",
            f"trusted.functions={json.dumps(functions)}"]


class GuardRun:
    """The detector on one source, in a child process, while the judging goes on."""

    def __init__(self, source: str):
        self._report: GuardReport | None = None
        # made here, in the caller's thread: CPython 3.11's parser is not safe to run in two
        # threads at once ("AST constructor recursion depth mismatch"), and the judging parses
        request = json.dumps({"source": source, "overrides": overrides()})
        self._thread = threading.Thread(target=self._run, args=(request,), daemon=True)
        self._thread.start()

    def _run(self, request: str) -> None:
        try:
            done = subprocess.run([sys.executable, "-m", __name__], input=request,
                                  capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._report = GuardReport(error=f"timed out after {TIMEOUT_S} s")
            return
        except Exception as exc:  # noqa: BLE001 - an opinion that fails is only a flag
            self._report = GuardReport(error=f"did not start: {exc!r}")
            return
        try:
            self._report = GuardReport(**json.loads(done.stdout))
        except (ValueError, TypeError):
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            self._report = GuardReport(error=f"failed (exit {done.returncode}): {tail[0][:200]}")

    def report(self) -> GuardReport:
        self._thread.join(TIMEOUT_S + 5)
        return self._report or GuardReport(error="did not answer")


def analyse(source: str, settings: list[str]) -> dict:
    """The child's work: KernelGuard's analysis, each hit with its rule's tier."""
    try:
        import kernelguard
    except ImportError:
        return {"error": "kernelguard is not installed (Python 3.11+)"}
    from importlib import metadata

    kernelguard.configure_runtime(overrides=settings)
    found = kernelguard.analyze_code(source)
    registry = kernelguard.RULE_REGISTRY
    hits = [{"rule": m["pattern"], "severity": m.get("severity", ""),
             "tier": registry[m["pattern"]].evidence_tier if m["pattern"] in registry
             else "telemetry", "evidence": str(m.get("evidence", ""))[:300]}
            for m in found["matched_patterns"]]
    unique = list({(h["rule"], h["evidence"]): h for h in hits}.values())
    return {"tool": f"kernelguard {metadata.version('kernelguard')}",
            "classification": found["classification"], "hits": unique}


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))  # before any input
    os.nice(19)  # an opinion: it yields the CPU to the judging it runs beside
    request = json.loads(sys.stdin.read())
    sys.setrecursionlimit(10_000)
    print(json.dumps(analyse(request["source"], request["overrides"])))


if __name__ == "__main__":
    main()
