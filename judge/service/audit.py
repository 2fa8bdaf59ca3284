"""The organizers' audit log (`models.AuditEntry`): every sanction, rejudge, review decision,
system test and change of a setting, problem set or account, with who asked and when; read by
organizers (GET /api/audit, the Audit page, `kjudge audit`).

API routes write it through `deps.AuditDep`, which fails a request whose route wrote nothing,
and every organizer route that changes something takes it (a test walks the routes), so an
action cannot go unlogged by a forgotten line. Commands run on the server's own host, and the
janitor, write entries with no actor.
"""

from __future__ import annotations

import json
from datetime import date, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from judge.service.models import AuditEntry, User

ON_THE_HOST = "(server host)"  # who an entry without an actor was made by


def record(s: Session, actor: User | None, action: str, target: str,
           **details) -> AuditEntry:
    """One entry, in the caller's transaction (it lands with the action or not at all)."""
    entry = AuditEntry(actor_id=actor.id if actor else None, action=action,
                       target=str(target)[:200], details=json.loads(json.dumps(
                           {k: v for k, v in details.items() if v is not None},
                           default=_plain)))
    s.add(entry)
    return entry


def _plain(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (set, tuple)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not for the audit log")


def entries(s: Session, limit: int = 200, action: str | None = None, actor: str | None = None,
            before: int | None = None) -> list[AuditEntry]:
    """Newest first; `action` matches its start (`sanction` finds every sanction's), `before` an
    entry id (the next page)."""
    query = select(AuditEntry).options(joinedload(AuditEntry.actor))
    if action:
        query = query.where(AuditEntry.action.startswith(action, autoescape=True))
    if actor:
        query = query.join(User, User.id == AuditEntry.actor_id).where(User.name == actor)
    if before:
        query = query.where(AuditEntry.id < before)
    return list(s.scalars(query.order_by(AuditEntry.id.desc()).limit(limit)))


def view(entry: AuditEntry) -> dict:
    return {"id": entry.id, "at": entry.at, "actor": entry.actor.name if entry.actor
            else ON_THE_HOST, "action": entry.action, "target": entry.target,
            "details": entry.details}
