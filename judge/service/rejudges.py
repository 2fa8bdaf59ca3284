"""A rejudge's diff, and a staged rejudge applied or cancelled as a whole (DOMjudge's
rejudgings). `store.rejudge(..., staged=True)` judges the submissions aside: its judgings are
no submission's result (`JudgingRow.valid` false) and no board counts them until an organizer,
having read the diff, applies the rejudge (they become the results, at once, together) or
cancels it (they stay in the history, never counted; those not judged yet are dropped).

The diff holds for any rejudge: per submission its result without the rejudge and with it,
and per board it touches (each contest of its submissions, and the board of all) the rows whose
rank or total would move.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload, selectinload

from judge.service import store
from judge.service.counters import results_changed
from judge.service.errors import ServiceError
from judge.service.models import Contest, JudgingRow, Rejudge, Submission, User, utcnow
from judge.service.store import APPLIED, CANCELLED, DONE, STAGED


def get(s: Session, rejudge_id: int) -> Rejudge:
    record = s.get(Rejudge, rejudge_id)
    if record is None:
        raise ServiceError(404, f"no rejudge {rejudge_id}")
    return record


def judgings_of(s: Session, record: Rejudge) -> list[JudgingRow]:
    return list(s.scalars(select(JudgingRow).where(JudgingRow.rejudge_id == record.id)
                          .options(joinedload(JudgingRow.submission).options(
                              joinedload(Submission.user), joinedload(Submission.problem),
                              selectinload(Submission.judgings)))
                          .order_by(JudgingRow.id)))


def _result(judging: JudgingRow | None) -> dict | None:
    if judging is None:
        return None
    return {"verdict": judging.verdict, "score": judging.score, "speedup": judging.speedup,
            "judging": judging.id}


def diff(s: Session, record: Rejudge) -> dict:
    """What the rejudge changes (or would, when applied): the submissions whose verdict or
    score differ with it, how many do not, how many are still being judged (or were dropped by
    a cancel), and per board the rows whose rank or total move."""
    changed, unchanged, pending, dropped = [], 0, 0, 0
    for judging in judgings_of(s, record):
        if judging.state != DONE:
            pending += 1
            continue
        if judging.record is None:  # dropped by a cancel before it was judged
            dropped += 1
            continue
        submission = judging.submission
        others = [j for j in submission.judgings if j.valid and j.rejudge_id != record.id]
        before = store.current_of(others)
        after = store.current_of(sorted(others + [judging], key=lambda j: j.id))
        if before is not None and after is not None and (before.verdict, before.score) == (
                after.verdict, after.score):
            unchanged += 1
            continue
        changed.append({"submission": submission.id, "user": submission.user.name,
                        "problem": submission.problem.slug, "before": _result(before),
                        "after": _result(after)})
    return {"id": record.id, "reason": record.reason, "state": state_of(record),
            "pending": pending, "dropped": dropped, "unchanged": unchanged, "changed": changed,
            "boards": _boards(s, record)}


def _boards(s: Session, record: Rejudge) -> list[dict]:
    contest_ids = set(s.scalars(select(Submission.contest_id).join(
        JudgingRow, JudgingRow.submission_id == Submission.id).where(
        JudgingRow.rejudge_id == record.id, Submission.contest_id.is_not(None))).all())
    contests = [None, *s.scalars(select(Contest).where(Contest.id.in_(contest_ids))
                                 .order_by(Contest.id))]
    boards = []
    for contest in contests:
        without = store.board_as_if(s, contest, (record.id, False))["rows"]
        with_it = store.board_as_if(s, contest, (record.id, True))["rows"]
        moved = []
        for key in dict.fromkeys(map(store.key_of, without + with_it)):
            old, new = store.find_row(without, key) or {}, store.find_row(with_it, key) or {}
            before = {"rank": old.get("rank"), "total": old.get("total", 0.0)}
            after = {"rank": new.get("rank"), "total": new.get("total", 0.0)}
            if before != after:
                moved.append({"name": key[1], "team": key[0], "before": before,
                              "after": after})
        moved.sort(key=lambda row: (row["after"]["rank"] or 1 << 30, row["name"]))
        boards.append({"contest": contest.slug if contest else None, "rows": moved})
    return boards


def state_of(record: Rejudge) -> str:
    """`staged`, `applied`, `cancelled`, or `counted` (an immediate rejudge or system test)."""
    return record.state or "counted"


def _staged(record: Rejudge) -> None:
    if record.state != STAGED:
        raise ServiceError(409, f"rejudge {record.id} is {state_of(record)}: only a staged "
                                "rejudge is applied or cancelled")


def apply(s: Session, admin: User, record: Rejudge) -> None:
    """Its judgings become their submissions' results, together (all must have ended)."""
    _staged(record)
    judgings = judgings_of(s, record)
    waiting = sum(j.state != DONE for j in judgings)
    if waiting:
        raise ServiceError(409, f"rejudge {record.id} has {waiting} judging(s) still to end: "
                                "apply it once they have (or cancel it)")
    for judging in judgings:
        judging.valid = True
    _settle(record, admin, APPLIED)
    results_changed(s)


def cancel(s: Session, admin: User, record: Rejudge) -> int:
    """Its judgings never count; those not judged yet are dropped (a worker that holds one
    loses its claim). Returns how many were dropped."""
    _staged(record)
    dropped = 0
    for judging in judgings_of(s, record):
        if judging.state != DONE:
            judging.state, judging.claim, judging.finished_at = DONE, None, utcnow()
            dropped += 1
    _settle(record, admin, CANCELLED)
    return dropped


def _settle(record: Rejudge, admin: User, state: str) -> None:
    record.state, record.settled_by, record.settled_at = state, admin.id, utcnow()
