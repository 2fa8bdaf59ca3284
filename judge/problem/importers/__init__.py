"""`kjudge problem import --from FORMAT SOURCE`: problem folders from the formats organizers
already keep problems in. One module per format, each defining FORMAT (what it reads) and
`convert(source) -> Draft` (draft.py); the list of formats is this package's modules. Nothing
is imported until a format is used (the CLI lists them at every start)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

FORMATS = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "draft"))


def import_problem(fmt: str, source: Path, out: Path | None, root: Path):
    """Convert `source` and write the folder (`out`, else root/<slug>): (path, Draft)."""
    from judge.problem.importers.draft import ImportFailure, write

    if fmt not in FORMATS:
        raise ImportFailure(fmt, "--from", "unknown format", f"use one of {', '.join(FORMATS)}")
    if not source.exists():
        raise ImportFailure(str(source), "", "not found")
    draft = importlib.import_module(f"{__name__}.{fmt}").convert(source)
    return write(draft, out or root / draft.slug), draft
