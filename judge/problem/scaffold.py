"""`kjudge problem new SLUG`: a valid problem folder to edit (a vector add, from judge/problem/template)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

TEMPLATE = Path(__file__).parent / "template"
SLUG = re.compile(r"^[a-z][a-z0-9_]{1,63}$")


def new_problem(slug: str, root: Path) -> Path:
    if not SLUG.match(slug):
        raise ValueError(f"{slug!r} is not a valid slug: use lower case letters, digits and _, "
                         "starting with a letter")
    target = root / slug
    if target.exists():
        raise ValueError(f"{target} already exists")
    shutil.copytree(TEMPLATE, target, ignore=shutil.ignore_patterns("__pycache__"))
    spec = target / "problem.yaml"
    title = slug.replace("_", " ").capitalize()
    spec.write_text(spec.read_text().replace("{title}", title))
    return target
