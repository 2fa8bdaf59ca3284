"""Clarifications and announcements (`models.Clarification`).

A contestant asks about a problem (or the contest, or in general); organizers answer privately
(the asker reads it) or to everyone, and announce to everyone. A contestant reads the public
ones and their own; what was answered or announced since they last read it is unread (shown on
every page and by `kjudge clar`). For organizers, unread are the questions not answered yet.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import and_, func, or_, select, true
from sqlalchemy.orm import Session, joinedload

from judge.service.catalog import get_shown_problem
from judge.service.contests import visible_contest
from judge.service.errors import ServiceError
from judge.service.models import (
    Clarification,
    ClarificationRead,
    User,
    utcnow,
)
from judge.service.times import aware
from judge.settings import Settings

MAX_TEXT = 4000
QUESTION_WINDOW = timedelta(hours=1)


def _text(text: str, what: str) -> str:
    text = text.strip()
    if not text:
        raise ServiceError(422, f"the {what} is empty")
    if len(text) > MAX_TEXT:
        raise ServiceError(422, f"the {what} is over {MAX_TEXT} characters")
    return text


def _scope(s: Session, reader: User, contest_slug: str | None,
           problem: str | None) -> int | None:
    """The contest's id; the problem must be one of its problems (or any active one), both
    as `reader` sees them (hidden contests are not there for contestants)."""
    contest = visible_contest(s, contest_slug, reader) if contest_slug else None
    if problem:
        if contest is not None and problem not in contest.problems:
            raise ServiceError(404, f"problem {problem} is not part of {contest.slug}")
        get_shown_problem(s, problem, reader)
    return contest.id if contest else None


def ask(s: Session, settings: Settings, user: User, text: str, problem: str | None = None,
        contest: str | None = None) -> Clarification:
    since = utcnow() - QUESTION_WINDOW
    asked = s.scalars(select(Clarification.created_at).where(
        Clarification.asked_by == user.id, Clarification.created_at >= since)
        .order_by(Clarification.created_at)).all()
    if not user.is_admin and len(asked) >= settings.questions_per_hour:
        again = aware(asked[0]) + QUESTION_WINDOW
        raise ServiceError(429, f"at most {settings.questions_per_hour} questions an hour; "
                                f"the next at {again.isoformat(timespec='seconds')}")
    clar = Clarification(contest_id=_scope(s, user, contest, problem), problem=problem or None,
                         asked_by=user.id, question=_text(text, "question"), public=False)
    s.add(clar)
    s.flush()
    return clar


def answer(s: Session, admin: User, clarification_id: int, text: str,
           public: bool) -> Clarification:
    """Answer a question (again: the new answer replaces the old, unread anew)."""
    clar = s.get(Clarification, clarification_id)
    if clar is None or clar.asked_by is None:
        raise ServiceError(404, f"no question {clarification_id} (GET /api/clarifications)")
    clar.answer, clar.public = _text(text, "answer"), public
    clar.answered_by, clar.answered_at = admin.id, utcnow()
    return clar


def announce(s: Session, admin: User, text: str, contest: str | None = None,
             problem: str | None = None) -> Clarification:
    now = utcnow()
    clar = Clarification(contest_id=_scope(s, admin, contest, problem), problem=problem or None,
                         answer=_text(text, "announcement"), answered_by=admin.id,
                         answered_at=now, created_at=now, public=True)
    s.add(clar)
    s.flush()
    return clar


def listing(s: Session, user: User, contest: str | None = None,
            unread_only: bool = False) -> list[tuple[Clarification, bool]]:
    """What this user reads, newest first, each with whether it is unread; in a contest: its
    own and those of no contest."""
    read = (select(ClarificationRead.clarification_id, ClarificationRead.read_at)
            .where(ClarificationRead.user_id == user.id).subquery())
    query = (select(Clarification, read.c.read_at)
             .outerjoin(read, read.c.clarification_id == Clarification.id)
             .where(true() if user.is_admin else or_(Clarification.public,
                                                     Clarification.asked_by == user.id))
             .options(joinedload(Clarification.asker), joinedload(Clarification.contest))
             .order_by(func.coalesce(Clarification.answered_at, Clarification.created_at).desc(),
                       Clarification.id.desc()))
    if contest:
        contest_id = _scope(s, user, contest, None)
        query = query.where(or_(Clarification.contest_id.is_(None),
                                Clarification.contest_id == contest_id))
    if unread_only:
        query = query.where(_unread(user, read.c.read_at))
    return [(clar, _is_unread(user, clar, read_at)) for clar, read_at in s.execute(query)]


def _unread(user: User, read_at):
    if user.is_admin:
        return and_(Clarification.asked_by.is_not(None), Clarification.answered_at.is_(None))
    return and_(Clarification.answered_at.is_not(None),
                or_(read_at.is_(None), read_at < Clarification.answered_at))


def _is_unread(user: User, clar: Clarification, read_at) -> bool:
    if user.is_admin:
        return clar.asked_by is not None and clar.answered_at is None
    return clar.answered_at is not None and (read_at is None
                                             or aware(read_at) < aware(clar.answered_at))


def mark_read(s: Session, user: User, ids: list[int] | None = None) -> int:
    """Mark these (or all this user reads) read now; returns how many (each once)."""
    shown = {clar.id for clar, _ in listing(s, user)}
    chosen = shown if ids is None else shown.intersection(ids)
    now = utcnow()
    known = {row.clarification_id: row for row in s.scalars(select(ClarificationRead).where(
        ClarificationRead.user_id == user.id,
        ClarificationRead.clarification_id.in_(chosen)))} if chosen else {}
    for clar_id in chosen:
        if clar_id in known:
            known[clar_id].read_at = now
        else:
            s.add(ClarificationRead(user_id=user.id, clarification_id=clar_id, read_at=now))
    return len(chosen)


def view(clar: Clarification, unread: bool, admin: bool) -> dict:
    """As a reader sees it: the asker's name only for organizers (a public answer shows the
    question, not who asked)."""
    shown = {"id": clar.id, "contest": clar.contest.slug if clar.contest else None,
             "problem": clar.problem, "question": clar.question,
             "created_at": clar.created_at, "answer": clar.answer,
             "answered_at": clar.answered_at, "public": clar.public,
             "announcement": clar.asked_by is None, "unread": unread}
    if admin:
        shown["asked_by"] = clar.asker.name if clar.asker else None
    return shown
