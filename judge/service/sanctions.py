"""Organizers' sanctions, each with a reason (`models.Sanction`):

- `ignore` a submission: it stays in the history, readable, and counts nowhere (no board, no
  solver count, no system test);
- `disqualify` a user, or a team, from a contest: their submissions there count on no board and
  they submit there no more;
- `ban` a user: no new submission anywhere (what they made before still counts).

A sanction is lifted, never deleted, so its history stays. Every change moves the results'
version (the boards are computed again); the API writes each to the audit log.
"""

from __future__ import annotations

from sqlalchemy import and_, exists, not_, or_, select
from sqlalchemy.orm import Session, aliased

from judge.service.accounts import get_user
from judge.service.contests import get_contest
from judge.service.counters import results_changed
from judge.service.errors import ServiceError
from judge.service.models import Contest, Sanction, Submission, User, utcnow

IGNORE, DISQUALIFY, BAN = "ignore", "disqualify", "ban"
KINDS = (IGNORE, DISQUALIFY, BAN)
ACTIVE = Sanction.lifted_at.is_(None)


def counted():
    """The one rule of which submissions sanctions leave on the boards (a condition on
    Submission): none ignored, none of a user or team disqualified from its contest."""
    author = aliased(User)
    team_of_author = (select(author.team).where(author.id == Submission.user_id)
                      .correlate(Submission).scalar_subquery())
    ignored = exists().where(ACTIVE, Sanction.kind == IGNORE,
                             Sanction.submission_id == Submission.id)
    disqualified = exists().where(
        ACTIVE, Sanction.kind == DISQUALIFY, Sanction.contest_id == Submission.contest_id,
        or_(Sanction.user_id == Submission.user_id,
            and_(Sanction.team.is_not(None), Sanction.team == team_of_author)))
    return and_(not_(ignored), not_(disqualified))


def impose(s: Session, admin: User, kind: str, reason: str, *, submission_id: int | None = None,
           user: str | None = None, team: str | None = None,
           contest: str | None = None) -> Sanction:
    """A new sanction; one already in force on the same target is a 409 naming it."""
    if kind not in KINDS:
        raise ServiceError(422, f"kind {kind!r}: use one of {', '.join(KINDS)}")
    if not reason.strip():
        raise ServiceError(422, "a sanction needs a reason (the one sanctioned reads it)")
    sanction = Sanction(kind=kind, reason=reason.strip(), created_by=admin.id)
    if kind == IGNORE:
        _only(kind, "submission", submission_id, user=user, team=team, contest=contest)
        if s.get(Submission, submission_id) is None:
            raise ServiceError(404, f"no submission {submission_id}")
        sanction.submission_id = submission_id
    elif kind == BAN:
        _only(kind, "user", user, submission=submission_id, team=team, contest=contest)
        sanction.user_id = get_user(s, user).id
        if s.get(User, sanction.user_id).is_admin:
            raise ServiceError(422, f"{user} is an organizer: an organizer is not banned")
    else:
        if contest is None or (user is None) == (team is None) or submission_id is not None:
            raise ServiceError(422, "disqualify names a contest, and a user or a team "
                                    "(not both, not a submission)")
        sanction.contest_id = get_contest(s, contest).id
        if user is not None:
            sanction.user_id = get_user(s, user).id
        elif not s.scalar(select(User.id).where(User.team == team).limit(1)):
            raise ServiceError(404, f"no user is in team {team!r}")
        sanction.team = team
    _refuse_twice(s, sanction)
    s.add(sanction)
    s.flush()
    results_changed(s)
    return sanction


def _only(kind: str, needed: str, value, **others) -> None:
    if value is None:
        raise ServiceError(422, f"{kind} names a {needed}")
    extra = [name for name, given in others.items() if given is not None]
    if extra:
        raise ServiceError(422, f"{kind} names a {needed} only, not a {' or '.join(extra)}")


def _refuse_twice(s: Session, new: Sanction) -> None:
    fields = ("submission_id", "user_id", "team", "contest_id")
    same = s.scalar(select(Sanction).where(ACTIVE, Sanction.kind == new.kind, *[
        _equal(getattr(Sanction, name), getattr(new, name)) for name in fields]).limit(1))
    if same is not None:
        raise ServiceError(409, f"sanction {same.id} does that already ({same.reason}); "
                                "lift it first to change its reason")


def _equal(column, value):
    return column.is_(None) if value is None else column == value


def lift(s: Session, admin: User, sanction_id: int, reason: str) -> Sanction:
    sanction = s.get(Sanction, sanction_id)
    if sanction is None:
        raise ServiceError(404, f"no sanction {sanction_id} (GET /api/sanctions lists them)")
    if sanction.lifted_at is not None:
        raise ServiceError(409, f"sanction {sanction_id} was lifted already")
    if not reason.strip():
        raise ServiceError(422, "say why the sanction is lifted")
    sanction.lifted_at, sanction.lifted_by, sanction.lift_reason = utcnow(), admin.id, reason
    results_changed(s)
    return sanction


def listing(s: Session, everything: bool = False) -> list[Sanction]:
    """Sanctions in force, newest first; `everything`: lifted ones too."""
    query = select(Sanction).order_by(Sanction.id.desc())
    return list(s.scalars(query if everything else query.where(ACTIVE)))


def refuse_barred(s: Session, user: User, contest: Contest | None) -> None:
    """A banned user, or one disqualified from this contest (or their team), submits no more:
    a 403 with the organizers' reason."""
    barred = s.scalar(select(Sanction).where(ACTIVE, or_(
        and_(Sanction.kind == BAN, Sanction.user_id == user.id),
        and_(Sanction.kind == DISQUALIFY, Sanction.contest_id == (contest.id if contest else -1),
             or_(Sanction.user_id == user.id,
                 and_(Sanction.team.is_not(None), Sanction.team == user.team))))).limit(1))
    if barred is None:
        return
    if barred.kind == BAN:
        raise ServiceError(403, f"you are banned from submitting: {barred.reason}")
    raise ServiceError(403, f"you are disqualified from contest {contest.slug}: {barred.reason}")


def affecting(s: Session, submissions: list[Submission]) -> dict[int, Sanction]:
    """Per submission id, the sanction in force that keeps it off the boards (its ignore, else
    its author's or team's disqualification from its contest), in two queries for any list."""
    ids = [x.id for x in submissions]
    contests = {x.contest_id for x in submissions if x.contest_id is not None}
    found: dict[int, Sanction] = {}
    if not ids:
        return found
    disqualified = s.scalars(select(Sanction).where(
        ACTIVE, Sanction.kind == DISQUALIFY, Sanction.contest_id.in_(contests))).all() \
        if contests else []
    for sanction in disqualified:
        for x in submissions:
            if x.contest_id == sanction.contest_id and (
                    sanction.user_id == x.user_id
                    or (sanction.team is not None and sanction.team == x.user.team)):
                found[x.id] = sanction
    for sanction in s.scalars(select(Sanction).where(
            ACTIVE, Sanction.kind == IGNORE, Sanction.submission_id.in_(ids))):
        found[sanction.submission_id] = sanction
    return found


def view(sanction: Sanction, names: dict[int, str] | None = None) -> dict:
    """A sanction as the API shows it (`names`: user id -> name, for who imposed and lifted)."""
    names = names or {}
    return {"id": sanction.id, "kind": sanction.kind, "reason": sanction.reason,
            "submission": sanction.submission_id,
            "user": sanction.user.name if sanction.user else None, "team": sanction.team,
            "contest": sanction.contest.slug if sanction.contest else None,
            "created_by": names.get(sanction.created_by), "created_at": sanction.created_at,
            "lifted_by": names.get(sanction.lifted_by), "lifted_at": sanction.lifted_at,
            "lift_reason": sanction.lift_reason, "active": sanction.lifted_at is None}


def brief(sanction: Sanction) -> dict:
    """What a submission's page says of the sanction that keeps it off the boards."""
    return {"id": sanction.id, "kind": sanction.kind, "reason": sanction.reason,
            "contest": sanction.contest.slug if sanction.contest else None}
