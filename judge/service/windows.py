"""Each user's own time in a contest (`models.Participation`), as CMS offers: in a contest with
`window_s`, a contestant starts their window when they choose (between its start and end) and
has that long, ending by the contest's end; an organizer may give one user extra time, which
moves their end past the contest's. A submission counts only if made in its author's time,
and the submit check refuses one outside it, with why.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from judge.service.contests import contest_state
from judge.service.counters import results_changed
from judge.service.errors import ServiceError
from judge.service.models import Contest, Participation, Submission, User, utcnow
from judge.service.times import aware


def own_end(contest: Contest, p: Participation | None) -> datetime | None:
    """When a user's time ends: their window (by the contest's end) or the contest's end, plus
    their extra time; None: no end, or a window not started."""
    if contest.window_s:
        if p is None or p.started_at is None:
            return None
        end = aware(p.started_at) + timedelta(seconds=contest.window_s)
        if contest.ends_at is not None:
            end = min(end, aware(contest.ends_at))
    elif contest.ends_at is not None:
        end = aware(contest.ends_at)
    else:
        return None
    return end + timedelta(seconds=p.extra_s if p else 0)


def get(s: Session, contest: Contest, user: User) -> Participation | None:
    return s.get(Participation, (contest.id, user.id))


def refresh(s: Session, contest: Contest) -> None:
    """Every participant's end again, after the contest's times or window changed."""
    for p in s.scalars(select(Participation).where(Participation.contest_id == contest.id)):
        p.ends_at = own_end(contest, p)


def start(s: Session, contest: Contest, user: User) -> Participation:
    if not contest.window_s:
        raise ServiceError(409, f"{contest.slug} has one window for everyone: nothing to start")
    state = contest_state(contest)
    if state != "running":
        raise ServiceError(403, f"contest {contest.slug} is {state.replace('_', ' ')}")
    p = get(s, contest, user) or Participation(contest_id=contest.id, user_id=user.id,
                                                 extra_s=0)
    if p.started_at is not None:
        raise ServiceError(409, f"you started {contest.slug} at "
                                f"{aware(p.started_at).isoformat(timespec='seconds')}")
    p.started_at = utcnow()
    p.ends_at = own_end(contest, p)
    s.add(p)
    s.flush()
    return p


def give_extra(s: Session, contest: Contest, user: User, seconds: int) -> Participation:
    """Set (not add) a user's extra time in the contest."""
    if seconds < 0:
        raise ServiceError(422, "extra time is zero seconds or more")
    p = get(s, contest, user) or Participation(contest_id=contest.id, user_id=user.id)
    p.extra_s = seconds
    p.ends_at = own_end(contest, p)
    s.add(p)
    s.flush()
    results_changed(s)  # what they made after the contest's end counts, or no longer does
    return p


def refuse_outside(s: Session, contest: Contest, user: User) -> None:
    """A submission outside the user's time is a 403 that says why (organizers need not start
    a window, and have the contest's times)."""
    state = contest_state(contest)
    if state == "not_started":
        raise ServiceError(403, f"contest {contest.slug} is not started")
    p = get(s, contest, user)
    if contest.window_s and not user.is_admin and (p is None or p.started_at is None):
        if state == "ended":
            raise ServiceError(403, f"contest {contest.slug} is ended")
        raise ServiceError(403, f"start your time in {contest.slug} first (kjudge window "
                                f"{contest.slug} --start, or Start on its page): you then "
                                f"have {contest.window_s // 60} min")
    end = aware(p.ends_at) if p is not None and p.ends_at is not None else (
        aware(contest.ends_at) if contest.ends_at else None)
    if end is not None and utcnow() >= end:
        raise ServiceError(403, f"your time in {contest.slug} ended at "
                                f"{end.isoformat(timespec='seconds')}" if p is not None
                           else f"contest {contest.slug} is ended")


def within(query, contest: Contest):
    """Only submissions made before their author's end (a condition on Submission; the
    contest's start is the caller's)."""
    query = query.outerjoin(Participation, and_(Participation.contest_id == contest.id,
                                                Participation.user_id == Submission.user_id))
    mine = Participation.ends_at
    if contest.ends_at is None:
        return query.where(or_(mine.is_(None), Submission.created_at < mine))
    return query.where(or_(and_(mine.is_not(None), Submission.created_at < mine),
                           and_(mine.is_(None), Submission.created_at < contest.ends_at)))


def latest_end(s: Session, contest: Contest) -> datetime | None:
    """When the last participant's time ends (the contest's end, or someone's extra time)."""
    ends = [aware(contest.ends_at)] if contest.ends_at else []
    last = s.scalar(select(func.max(Participation.ends_at)).where(
        Participation.contest_id == contest.id))
    return max(ends + ([aware(last)] if last else []), default=None)


def view(contest: Contest, p: Participation | None, user: User) -> dict:
    """A user's time in the contest, for the page's clock and `kjudge window`."""
    end = aware(p.ends_at) if p is not None and p.ends_at else (
        None if contest.window_s else aware(contest.ends_at) if contest.ends_at else None)
    started = aware(p.started_at) if p is not None and p.started_at else None
    now = utcnow()
    if contest_state(contest) == "not_started":
        state = "not_started"
    elif end is not None and now >= end:
        state = "ended"
    elif contest.window_s and started is None and not user.is_admin:
        state = "ended" if contest_state(contest) == "ended" else "to_start"
    else:
        state = "running"
    return {"contest": contest.slug, "user": user.name, "window_s": contest.window_s,
            "started_at": started, "extra_s": p.extra_s if p else 0, "ends_at": end,
            "state": state}
