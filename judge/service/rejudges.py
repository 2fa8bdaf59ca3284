"""A rejudge's diff, and a staged rejudge applied or cancelled as a whole (DOMjudge's
rejudgings). `rejudge(..., staged=True)` judges the submissions aside: its judgings are
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

from judge.service.boards import board_as_if, find_row, key_of
from judge.service.catalog import get_problem
from judge.service.counters import results_changed
from judge.service.errors import ServiceError
from judge.service.models import Contest, JudgingRow, Rejudge, Submission, User, utcnow
from judge.service.queueing import DONE, REJUDGE_QUEUE, Enqueue, live_queue
from judge.service.submissions import current_judging, current_of, latest_judging


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
        before = current_of(others)
        after = current_of(sorted(others + [judging], key=lambda j: j.id))
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
        without = board_as_if(s, contest, (record.id, False))["rows"]
        with_it = board_as_if(s, contest, (record.id, True))["rows"]
        moved = []
        for key in dict.fromkeys(map(key_of, without + with_it)):
            old, new = find_row(without, key) or {}, find_row(with_it, key) or {}
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


STAGED, APPLIED, CANCELLED = "staged", "applied", "cancelled"  # a staged rejudge's states


def rejudge(s: Session, admin: User, filters: dict, reason: str,
            staged: bool = False) -> tuple[Rejudge, list[Enqueue]]:
    """Judge the submissions the filters find again: counted as each ends, or `staged`: judged
    aside, for an organizer to apply or cancel as a whole (judge/service/rejudges.py). A
    submission in a staged rejudge not settled yet is in no other (409)."""
    if not reason.strip():
        raise ServiceError(422, "a rejudge needs a reason")
    query = select(Submission)
    if filters.get("submission_ids"):
        query = query.where(Submission.id.in_(filters["submission_ids"]))
    if filters.get("problem"):
        query = query.where(Submission.problem_id == get_problem(s, filters["problem"]).id)
    if filters.get("user"):
        user = s.scalar(select(User).where(User.name == filters["user"]))
        if user is None:
            raise ServiceError(404, f"no user {filters['user']!r}")
        query = query.where(Submission.user_id == user.id)
    if filters.get("since"):
        query = query.where(Submission.created_at >= filters["since"])
    if not any(filters.get(k) for k in ("submission_ids", "problem", "user", "verdict", "since")):
        raise ServiceError(422, "say what to rejudge: submission_ids, problem, user, verdict "
                                "or since")
    submissions = s.scalars(query.order_by(Submission.id)).all()
    if filters.get("verdict"):
        wanted = filters["verdict"]
        submissions = [x for x in submissions
                       if (current_judging(x) and current_judging(x).verdict == wanted)]
    _refuse_staged_twice(s, [x.id for x in submissions])
    record = Rejudge(reason=reason, filters={k: (str(v) if k == "since" else v)
                                             for k, v in filters.items() if v},
                     created_by=admin.id, state=STAGED if staged else None)
    s.add(record)
    s.flush()
    work = []
    for submission in submissions:
        queue = live_queue(latest_judging(submission).queue) + REJUDGE_QUEUE
        judging = JudgingRow(submission_id=submission.id, queue=queue, rejudge_id=record.id,
                             valid=not staged)
        s.add(judging)
        s.flush()
        work.append(Enqueue(judging.id, queue, True))
    return record, work


def _refuse_staged_twice(s: Session, submission_ids: list[int]) -> None:
    pending = s.execute(select(JudgingRow.submission_id, Rejudge.id)
                        .join(Rejudge, Rejudge.id == JudgingRow.rejudge_id)
                        .where(Rejudge.state == STAGED,
                               JudgingRow.submission_id.in_(submission_ids)).limit(1)).first()
    if pending is not None:
        raise ServiceError(409, f"submission {pending[0]} is in staged rejudge {pending[1]}: "
                                "apply or cancel that one first")


def rejudge_progress(s: Session, rejudge_id: int) -> dict:
    judgings = s.scalars(select(JudgingRow).where(JudgingRow.rejudge_id == rejudge_id)).all()
    done = sum(j.state == DONE for j in judgings)
    return {"total": len(judgings), "done": done, "pending": len(judgings) - done}
