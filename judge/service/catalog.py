"""The problems the service serves: every folder under the problems directory loaded into
its row (`sync_problems`), and the lookup of an active one.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.judging.admission import device_kinds
from judge.problem.schema import ProblemError, load_problem, problem_folders
from judge.service.contests import hidden_problems
from judge.service.errors import ServiceError
from judge.service.models import ProblemRow, User, utcnow
from judge.settings import Settings


def sync_problems(s: Session, settings: Settings) -> dict[str, list[str]]:
    """Load every folder under the problems directory; returns the issues of invalid ones."""
    invalid: dict[str, list[str]] = {}
    seen = set()
    for folder in problem_folders(settings.problems_dir):
        try:
            problem = load_problem(folder)
        except ProblemError as exc:
            invalid[folder.name] = [str(i) for i in exc.issues]
            continue
        seen.add(problem.slug)
        row = s.scalar(select(ProblemRow).where(ProblemRow.slug == problem.slug))
        if row is None:
            row = ProblemRow(slug=problem.slug)
            s.add(row)
        row.title, row.version, row.path = problem.spec.title, problem.version, str(problem.path)
        row.languages, row.active, row.loaded_at = list(problem.spec.languages), True, utcnow()
        row.source_kb, row.devices = problem.spec.limits.source_kb, list(device_kinds(problem))
    for row in s.scalars(select(ProblemRow).where(ProblemRow.slug.not_in(seen))):
        row.active = False
    return invalid


def get_shown_problem(s: Session, slug: str, reader: User | None) -> ProblemRow:
    """`get_problem`, as `reader` (None: a visitor) may see it: one that only hidden contests
    hold is not there for all but organizers."""
    row = get_problem(s, slug)
    if not (reader is not None and reader.is_admin) and slug in hidden_problems(s):
        raise ServiceError(404, f"no problem {slug!r}; GET /api/problems lists them")
    return row


def get_problem(s: Session, slug: str) -> ProblemRow:
    row = s.scalar(select(ProblemRow).where(ProblemRow.slug == slug, ProblemRow.active))
    if row is None:
        raise ServiceError(404, f"no problem {slug!r}; GET /api/problems lists them")
    return row
