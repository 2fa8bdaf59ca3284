"""A worker's hold on a judging. The database is the source of truth: a judging is QUEUED
until a worker claims it with a fresh claim token; only the holder of the current token can move
it on or finish it, so a judging finishes exactly once even when a worker dies and another picks
it up.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from judge.judging.record import JudgeResult
from judge.service import metrics
from judge.service.counters import results_changed
from judge.service.models import JudgingRow, record_columns, utcnow
from judge.service.queueing import DONE, QUEUED
from judge.service.reviews import CLEARED, DISQUALIFIED
from judge.verdicts import State


def claim(s: Session, judging_id: int, worker: str) -> str | None:
    """Take a QUEUED judging for this worker; None when it is done or held by another."""
    token = uuid.uuid4().hex
    now = utcnow()
    result = s.execute(update(JudgingRow).where(JudgingRow.id == judging_id, JudgingRow.state == QUEUED)
                       .values(state=State.COMPILING.value, claim=token, worker=worker,
                               attempts=JudgingRow.attempts + 1, started_at=now, heartbeat_at=now))
    return token if result.rowcount == 1 else None


def holds(s: Session, judging_id: int, token: str, **values) -> bool:
    """Update a judging only while this claim holds it; False when the claim was lost."""
    values.setdefault("heartbeat_at", utcnow())
    result = s.execute(update(JudgingRow).where(JudgingRow.id == judging_id, JudgingRow.claim == token,
                                             JudgingRow.state != DONE).values(**values))
    return result.rowcount == 1


def finish(s: Session, judging_id: int, token: str, result: JudgeResult) -> bool:
    """End a judging with its record, while this claim holds it (its times counted into the
    operators' histograms in the same transaction: judge/service/metrics.py)."""
    done = holds(s, judging_id, token, state=DONE, finished_at=utcnow(),
                 **record_columns(result))
    if done:
        _carry_decision(s, s.get(JudgingRow, judging_id), result)
        results_changed(s)
        metrics.observe(s, result.phases, result.wall_s)
    return done


def _carry_decision(s: Session, judging: JudgingRow, result: JudgeResult) -> None:
    """A rejudge (a system test) is reviewed afresh, except where an organizer already decided
    on the same submission: a disqualification stands, and a clearance covers the new holds
    when it covered the same findings (a source's KernelGuard hits; not a new measurement's).
    Only a rejudge's judging has an earlier one: a first judging costs no query here."""
    if judging.rejudge_id is None:
        return
    earlier = s.scalars(select(JudgingRow).where(
        JudgingRow.submission_id == judging.submission_id, JudgingRow.id != judging.id,
        JudgingRow.decision.is_not(None)).order_by(JudgingRow.id.desc())).first()
    if earlier is None:
        return
    seen = {(h["by"], h["what"]) for h in (earlier.record or {}).get("holds") or []}
    if earlier.decision == DISQUALIFIED or (
            result.needs_review and earlier.decision == CLEARED
            and {(h["by"], h["what"]) for h in result.holds} <= seen
            and all(h.get("test") is None for h in result.holds)):
        judging.decision, judging.decided_by = earlier.decision, earlier.decided_by
        judging.decided_at = utcnow()
        judging.decision_note = f"carried from judging {earlier.id}"
