"""The review list: results held off the boards (a charged forgery, a time under physics, a
hard-tier KernelGuard hit) until an organizer clears or disqualifies them.
"""

from __future__ import annotations

from sqlalchemy import and_, func, select, true
from sqlalchemy.orm import Session, joinedload

from judge.service.counters import results_changed
from judge.service.errors import ServiceError
from judge.service.models import Contest, JudgingRow, Submission, User, utcnow


def review_list(s: Session, limit: int = 200, undecided: bool = False
                ) -> list[tuple[Submission, JudgingRow]]:
    """Submissions a judging of which is on the review list (see JudgeResult.holds), newest
    first, each with its latest such judging; `undecided`: only those no organizer decided."""
    flagged = (select(JudgingRow.submission_id, func.max(JudgingRow.id).label("judging"))
               .where(JudgingRow.review.is_(True), JudgingRow.valid)
             .group_by(JudgingRow.submission_id)
               .subquery())
    query = (select(Submission, JudgingRow)
             .join(flagged, flagged.c.submission_id == Submission.id)
             .join(JudgingRow, JudgingRow.id == flagged.c.judging)
             .where(JudgingRow.decision.is_(None) if undecided else true())
             .options(joinedload(Submission.user), joinedload(Submission.problem))
             .order_by(Submission.id.desc()).limit(limit))
    return [(submission, judging) for submission, judging in s.execute(query)]


CLEARED, DISQUALIFIED = "cleared", "disqualified"  # an organizer's decisions on a review


def decide(s: Session, admin: User, judging_id: int, decision: str, note: str = "") -> JudgingRow:
    """An organizer's decision on a judging on the review list, in one action: `cleared` (it
    counts as judged) or `disqualified` (it counts nowhere). A later decision replaces it; a
    rejudge's judging is reviewed afresh."""
    if decision not in (CLEARED, DISQUALIFIED):
        raise ServiceError(422, f"decision {decision!r}: use {CLEARED!r} or {DISQUALIFIED!r}")
    judging = s.get(JudgingRow, judging_id)
    if judging is None or not judging.review:
        raise ServiceError(404, f"no judging {judging_id} on the review list (GET /api/review)")
    judging.decision, judging.decided_by = decision, admin.id
    judging.decided_at, judging.decision_note = utcnow(), note or None
    results_changed(s)
    return judging


def held_for_review():
    """Which judgings are held off the boards (a condition on JudgingRow, with Contest
    outer-joined on the submission's): on the review list, no organizer has decided, and its
    contest holds flagged results (submissions outside a contest: always)."""
    return and_(JudgingRow.review.is_(True), JudgingRow.decision.is_(None),
                func.coalesce(Contest.hold_flagged, true()))


def held(s: Session, judging: JudgingRow) -> bool:
    """Whether `held_for_review` holds this judging (only one on the review list can be)."""
    if not judging.review:
        return False
    return bool(s.scalar(select(held_for_review()).select_from(JudgingRow)
                         .join(Submission, Submission.id == JudgingRow.submission_id)
                         .outerjoin(Contest, Contest.id == Submission.contest_id)
                         .where(JudgingRow.id == judging.id)))
