"""The API's routes for organizers' sanctions (ignore, disqualify, ban, lift:
judge/service/sanctions.py) and the audit log of every organizer's action."""

from __future__ import annotations

from fastapi import APIRouter, Query
from pydantic import Field
from sqlalchemy import select

from judge.service import audit, sanctions
from judge.service.deps import AdminDep, AuditDep, Body, IdInPath, RowId, SessionDep
from judge.service.models import User

router = APIRouter(tags=["sanctions and audit"])


class SanctionIn(Body):
    kind: str = Field(description="`ignore` a submission, `disqualify` a user or team from a "
                      "contest, `ban` a user from submitting")
    reason: str = Field(max_length=2000, description="shown to the one sanctioned")
    submission: RowId | None = None
    user: str | None = None
    team: str | None = None
    contest: str | None = None


class LiftIn(Body):
    reason: str = Field(max_length=2000)


@router.get("/api/sanctions")
def list_sanctions(s: SessionDep, _admin: AdminDep, everything: bool = False) -> list[dict]:
    """Sanctions in force, newest first; `everything`: lifted ones too."""
    found = sanctions.listing(s, everything)
    people = {x for sanction in found for x in (sanction.created_by, sanction.lifted_by)}
    names = dict(s.execute(select(User.id, User.name).where(User.id.in_(people))).all())
    return [sanctions.view(sanction, names) for sanction in found]


@router.post("/api/sanctions", status_code=201)
def impose(body: SanctionIn, s: SessionDep, audit_log: AuditDep) -> dict:
    """Ignore a submission (it counts nowhere), disqualify a user or team from a contest
    (their results there count nowhere, they submit there no more) or ban a user (no new
    submissions), with a reason the one sanctioned reads."""
    sanction = sanctions.impose(s, audit_log.admin, body.kind, body.reason,
                                submission_id=body.submission, user=body.user,
                                team=body.team, contest=body.contest)
    shown = sanctions.view(sanction, {audit_log.admin.id: audit_log.admin.name})
    target = {key: shown[key] for key in ("submission", "user", "team", "contest")
              if shown[key] is not None}
    audit_log(f"sanction.{body.kind}", " ".join(f"{k} {v}" for k, v in target.items()),
              sanction=sanction.id, reason=sanction.reason)
    return shown


@router.post("/api/sanctions/{sanction_id}/lift")
def lift(sanction_id: IdInPath, body: LiftIn, s: SessionDep, audit_log: AuditDep) -> dict:
    """End a sanction (it stays in the history): what it kept off counts again."""
    sanction = sanctions.lift(s, audit_log.admin, sanction_id, body.reason)
    audit_log("sanction.lift", f"sanction {sanction_id}", kind=sanction.kind,
              reason=body.reason)
    return sanctions.view(sanction)


@router.get("/api/audit")
def audit_entries(s: SessionDep, _admin: AdminDep, limit: int = Query(200, ge=1, le=1000),
                  action: str | None = None, actor: str | None = None,
                  before: int | None = Query(None, ge=1)) -> list[dict]:
    """Organizers' actions, newest first: `action` by its start (`sanction`), `actor` by
    name, `before` an entry id (the next page)."""
    return [audit.view(e) for e in audit.entries(s, limit, action, actor, before)]
