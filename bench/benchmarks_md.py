"""Write a figures block into BENCHMARKS.md between its markers (shared by the bench scripts)."""

from __future__ import annotations

from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"


def report_section(name: str, heading: str, block: str, write: bool = True) -> None:
    """Print a benchmark's block; with `write`, also put it between <!-- name:start --> and
    <!-- name:end --> in BENCHMARKS.md, adding the section under `heading` at the end when it is
    not there yet."""
    print(block)
    if not write:
        return
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = PATH.read_text()
    if start not in text:
        text += f"\n## {heading}\n\n{start}\n{end}\n"
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    PATH.write_text(f"{head}{start}\n{block}\n{end}{tail}")
