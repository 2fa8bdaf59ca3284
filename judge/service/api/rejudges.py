"""The API's organizer routes over results: rejudges (at once or staged, their diff, apply, cancel)
and the review list of held results."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Query
from pydantic import Field
from sqlalchemy import select

from judge.service import broker, rejudges, reviews
from judge.service.api.views import rejudge_view, review_view
from judge.service.deps import AdminDep, AuditDep, Body, IdInPath, RowId, SessionDep, SettingsDep
from judge.service.models import Rejudge

router = APIRouter(tags=["rejudges and review"])


class RejudgeIn(Body):
    reason: str = Field(max_length=2000)
    submission_ids: list[RowId] | None = Field(None, max_length=100_000)
    problem: str | None = None
    user: str | None = None
    verdict: str | None = None
    since: datetime | None = None
    staged: bool = Field(False, description="judge aside: nothing counts until it is applied "
                         "(POST /api/rejudge/{id}/apply) after reading its diff")


class DecisionIn(Body):
    decision: str = Field(description="`cleared` (it counts) or `disqualified` (it counts nowhere)")
    note: str = Field("", max_length=2000, description="why, for the other organizers")


@router.get("/api/review")
def review(s: SessionDep, _admin: AdminDep, limit: int = Query(200, ge=1, le=1000),
           undecided: bool = False) -> list[dict]:
    """Submissions on the review list (a charged forgery, a time under physics, a
    hard-tier KernelGuard hit: `holds`, each with its test point or source line), held off
    the boards until an organizer decides (POST /api/review/{judging_id})."""
    return [review_view(sub, judging) for sub, judging in reviews.review_list(s, limit,
                                                                            undecided)]


@router.post("/api/review/{judging_id}")
def decide(judging_id: IdInPath, body: DecisionIn, s: SessionDep,
           audit_log: AuditDep) -> dict:
    """Clear a held result (it counts as judged) or disqualify it (it counts nowhere)."""
    judging = reviews.decide(s, audit_log.admin, judging_id, body.decision, body.note)
    audit_log("review.decide", f"judging {judging_id}", decision=body.decision,
              submission=judging.submission_id, note=body.note or None)
    s.commit()
    return review_view(judging.submission, judging)


@router.post("/api/rejudge", status_code=202)
def rejudge(body: RejudgeIn, s: SessionDep, config: SettingsDep,
            audit_log: AuditDep) -> dict:
    filters = body.model_dump(exclude={"reason", "staged"})
    record, work = rejudges.rejudge(s, audit_log.admin, filters, body.reason, body.staged)
    audit_log("rejudge", f"rejudge {record.id}", reason=body.reason, judgings=len(work),
              filters=record.filters, staged=body.staged or None)
    s.commit()
    broker.publish(config, work)
    return rejudge_view(s, record)


@router.get("/api/rejudge/{rejudge_id}")
def rejudge_status(rejudge_id: IdInPath, s: SessionDep, _admin: AdminDep) -> dict:
    return rejudge_view(s, rejudges.get(s, rejudge_id))


@router.get("/api/rejudges")
def rejudge_list(s: SessionDep, _admin: AdminDep,
                 limit: int = Query(50, ge=1, le=500)) -> list[dict]:
    """Rejudges and system tests, newest first, with their progress and state."""
    found = s.scalars(select(Rejudge).order_by(Rejudge.id.desc()).limit(limit))
    return [rejudge_view(s, record) for record in found]


@router.get("/api/rejudge/{rejudge_id}/diff")
def rejudge_diff(rejudge_id: IdInPath, s: SessionDep, _admin: AdminDep) -> dict:
    """What it changes (a staged one: would change): submissions whose verdict or score
    differ, and per board the rows whose rank or total move."""
    return rejudges.diff(s, rejudges.get(s, rejudge_id))


@router.post("/api/rejudge/{rejudge_id}/apply")
def apply_rejudge(rejudge_id: IdInPath, s: SessionDep, audit_log: AuditDep) -> dict:
    """A staged rejudge's judgings become the results, together (once all have ended)."""
    record = rejudges.get(s, rejudge_id)
    summary = rejudges.diff(s, record)
    rejudges.apply(s, audit_log.admin, record)
    audit_log("rejudge.apply", f"rejudge {rejudge_id}", changed=len(summary["changed"]),
              unchanged=summary["unchanged"])
    return rejudge_view(s, record)


@router.post("/api/rejudge/{rejudge_id}/cancel")
def cancel_rejudge(rejudge_id: IdInPath, s: SessionDep, audit_log: AuditDep) -> dict:
    """A staged rejudge's judgings never count; those not judged yet are dropped."""
    record = rejudges.get(s, rejudge_id)
    dropped = rejudges.cancel(s, audit_log.admin, record)
    audit_log("rejudge.cancel", f"rejudge {rejudge_id}", dropped=dropped)
    return rejudge_view(s, record)
