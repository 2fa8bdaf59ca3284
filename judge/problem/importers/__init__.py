"""`kjudge problem import --from FORMAT SOURCE`: problem folders from the formats organizers
already keep problems in. One module per format, each defining FORMAT (what it reads),
`convert(source) -> Draft` (draft.py), `discover(folder)` (the problems a folder holds) and
`slug_for(source)` (the slug its Draft will take, read without running the format's code); the
list of formats is this package's modules. Nothing is imported until a format is used (the CLI
lists them at every start). judge/tooling/importing.py checks and keeps what converts."""

from __future__ import annotations

import importlib
import pkgutil
from collections import Counter
from pathlib import Path

from judge.problem.importers.draft import ImportFailure, slug_of, write

FORMATS = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "draft"))


def _format(fmt: str):
    if fmt not in FORMATS:
        raise ImportFailure(fmt, "--from", "unknown format", f"use one of {', '.join(FORMATS)}")
    return importlib.import_module(f"{__name__}.{fmt}")


def convert(fmt: str, source: Path):
    """The Draft of one problem's source."""
    module = _format(fmt)
    if not source.exists():
        raise ImportFailure(str(source), "", "not found")
    return module.convert(source)


def discover(fmt: str, source: Path) -> list[Path]:
    """The problems `source` holds: itself when it is one, else every one found under it."""
    module = _format(fmt)
    if not source.exists():
        raise ImportFailure(str(source), "", "not found")
    return sorted(module.discover(source))


def folder_names(fmt: str, sources: list[Path]) -> dict[Path, str]:
    """Each source's folder name, known before it is converted: its slug, or where two slugs
    collide (pmpp/conv2d_py and pmpp_v2/conv2d_py) the parent folder's name joined to it."""
    module = _format(fmt)
    slugs = {s: module.slug_for(s) for s in sources}
    counts = Counter(slugs.values())
    return {s: slug if counts[slug] == 1 else slug_of(f"{s.parent.name}_{slug}")
            for s, slug in slugs.items()}


def import_problem(fmt: str, source: Path, out: Path | None, root: Path):
    """Convert `source` and write the folder (`out`, else root/<slug>), unchecked:
    (path, Draft)."""
    draft = convert(fmt, source)
    return write(draft, out or root / draft.slug), draft
