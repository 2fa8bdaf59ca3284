"""A contest found by its slug, and its own state in time (whatever anyone's window)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.service.errors import ServiceError
from judge.service.models import Contest, utcnow
from judge.service.times import aware


def get_contest(s: Session, slug: str) -> Contest:
    contest = s.scalar(select(Contest).where(Contest.slug == slug))
    if contest is None:
        raise ServiceError(404, f"no contest {slug!r}")
    return contest


def contest_state(contest: Contest, now: datetime | None = None) -> str:
    """The contest's own state (not_started, running, ended), whatever anyone's window."""
    now = now or utcnow()
    if contest.starts_at and now < aware(contest.starts_at):
        return "not_started"
    if contest.ends_at and now >= aware(contest.ends_at):
        return "ended"
    return "running"
