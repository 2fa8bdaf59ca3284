"""Judgings in their queues: the queue a device's judgings go to (and its rejudge and
system-test queues), what is waiting and where a judging stands, and the janitor's part: judgings
whose worker died or whose message the broker lost, queued again (judge/service/broker.py sends
them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

import judge
from judge.host.device import default_queue_device
from judge.judging.record import JudgeResult
from judge.service.counters import results_changed
from judge.service.models import Contest, JudgingRow, Submission, record_columns, utcnow
from judge.service.times import aware
from judge.settings import Settings
from judge.verdicts import State, Verdict

DONE = State.DONE.value


QUEUED = State.QUEUED.value


@dataclass(frozen=True)
class Enqueue:
    """A judging to publish to the broker once the transaction that created it has committed."""

    judging_id: int
    queue: str
    rejudge: bool


def queue_device(settings: Settings, contest: Contest | None) -> str:
    """The device a submission is judged on: its contest's, else the settings' (cuda.h100, …)."""
    return contest.device if contest else default_queue_device(settings)


def queue_of(settings: Settings, device: str) -> str:
    kind, _, model = device.partition(".")
    return settings.queue_for(kind, model)


def queue_summary(s: Session) -> dict[str, dict]:
    """Per queue: judgings queued and running, and when the oldest waiting one was queued."""
    rows = s.execute(select(JudgingRow.queue, JudgingRow.state, func.count(JudgingRow.id),
                            func.min(JudgingRow.queued_at))
                     .where(JudgingRow.state != State.DONE.value)
                     .group_by(JudgingRow.queue, JudgingRow.state)).all()
    queues: dict[str, dict] = {}
    for name, state, count, oldest in rows:
        entry = queues.setdefault(name, {"queued": 0, "running": 0, "oldest_waiting": None})
        if state == State.QUEUED.value:
            entry["queued"] += count
            entry["oldest_waiting"] = oldest
        else:
            entry["running"] += count
    return queues


RECENT_JUDGINGS = 50  # the finished judgings of a queue whose durations estimate its wait


SERVING = timedelta(minutes=10)  # a worker that finished one this recently serves the queue


def queue_place(s: Session, judging: JudgingRow) -> dict | None:
    """Where a queued judging stands: its position in its queue (1: next), the judgings running
    there, and about how long until its verdict (None until the queue has judged something:
    the median of its recent judgings, times the rounds its workers need to reach and judge
    it). Rejudges wait in a queue of their own, behind live submissions, and are not counted."""
    if judging.state != State.QUEUED.value:
        return None
    same = JudgingRow.queue == judging.queue
    ahead = s.scalar(select(func.count(JudgingRow.id)).where(
        same, JudgingRow.state == State.QUEUED.value, JudgingRow.id < judging.id)) or 0
    running = s.execute(select(JudgingRow.worker).where(
        same, JudgingRow.state.in_([State.COMPILING.value, State.RUNNING.value]))).scalars().all()
    recent = s.execute(select(JudgingRow.started_at, JudgingRow.finished_at, JudgingRow.worker)
                       .where(same, JudgingRow.state == State.DONE.value,
                              JudgingRow.started_at.is_not(None),
                              JudgingRow.finished_at.is_not(None))
                       .order_by(JudgingRow.finished_at.desc()).limit(RECENT_JUDGINGS)).all()
    place = {"queue": judging.queue, "position": ahead + 1, "running": len(running),
             "estimate_s": None}
    if recent:
        durations = sorted((aware(end) - aware(start)).total_seconds() for start, end, _ in recent)
        since = utcnow() - SERVING
        workers = {w for w in running if w} | {w for _, end, w in recent
                                               if w and aware(end) >= since}
        rounds = -(-(ahead + len(running) + 1) // max(len(workers), 1))
        place["estimate_s"] = round(max(durations[len(durations) // 2], 0.0) * rounds, 1)
    return place


def system_error(submission: Submission, message: str, flag: str) -> JudgeResult:
    """The record of a judging that ended without a verdict of its own (SE)."""
    return JudgeResult(submission.problem.slug, language=submission.language, verdict=Verdict.SE,
                       message=f"system error: {message}", flags=[flag],
                       applied={"judge": judge.__version__})


REJUDGE_QUEUE, SYSTEM_TEST_QUEUE = ".rejudge", ".systest"  # suffixes of a device's queue


def live_queue(queue: str) -> str:
    return queue.removesuffix(REJUDGE_QUEUE).removesuffix(SYSTEM_TEST_QUEUE)


def live_work_waiting(s: Session, queue: str) -> bool:
    live = live_queue(queue)
    return bool(s.scalar(select(func.count(JudgingRow.id)).where(
        JudgingRow.queue == live, JudgingRow.state == QUEUED)))


def stale_claims(s: Session, settings: Settings) -> tuple[list[Enqueue], list[int]]:
    """Judgings whose worker stopped beating: requeue them, or end them as SE past the cap."""
    limit = utcnow() - timedelta(seconds=settings.stale_after_s)
    requeue, failed = [], []
    running = s.scalars(select(JudgingRow).where(
        JudgingRow.state.in_([State.COMPILING.value, State.RUNNING.value]),
        JudgingRow.heartbeat_at < limit))
    for judging in running:
        if judging.attempts >= settings.max_attempts:
            lost = system_error(judging.submission, "the judging kept losing its worker",
                                f"judging lost its worker {judging.attempts} times; check it by "
                                "hand before rejudging")
            for name, value in record_columns(lost).items():
                setattr(judging, name, value)
            judging.state, judging.finished_at, judging.claim = DONE, utcnow(), None
            failed.append(judging.id)
            results_changed(s)
        else:
            requeue.append(_requeue(judging))
    return requeue, failed


def hand_back(s: Session, workers: list[str]) -> list[Enqueue]:
    """The judgings these stopped workers (by `JudgingRow.worker` name) still held: queued
    again now, not after the janitor's wait for missed heartbeats."""
    held = s.scalars(select(JudgingRow).where(
        JudgingRow.worker.in_(workers),
        JudgingRow.state.in_([State.COMPILING.value, State.RUNNING.value])))
    return [_requeue(judging) for judging in held]


def _requeue(judging: JudgingRow) -> Enqueue:
    judging.state, judging.claim, judging.enqueued_at = QUEUED, None, None
    return Enqueue(judging.id, judging.queue, judging.rejudge_id is not None)


def unpublished(s: Session, settings: Settings, broker_counts: dict[str, int]) -> list[Enqueue]:
    """QUEUED judgings that the broker may not hold: never published, or more of them than
    messages in their queue (the broker lost messages, e.g. Redis restarted without a disk)."""
    quiet = utcnow() - timedelta(seconds=2)
    queued = s.execute(select(JudgingRow.id, JudgingRow.queue, JudgingRow.queued_at, JudgingRow.enqueued_at,
                              JudgingRow.rejudge_id).where(JudgingRow.state == QUEUED)).all()
    by_queue: dict[str, list] = {}
    for judging in queued:
        by_queue.setdefault(judging.queue, []).append(judging)
    out = []
    for queue, judgings in by_queue.items():
        lost = broker_counts.get(queue, 0) < len(judgings)
        for j in judgings:  # a judging stored a moment ago is being published by its API
            if (j.enqueued_at is None and aware(j.queued_at) < quiet) or (
                    lost and j.enqueued_at is not None and aware(j.enqueued_at) < quiet):
                out.append(Enqueue(j.id, j.queue, j.rejudge_id is not None))
    return out


def mark_enqueued(s: Session, judging_ids: list[int]) -> None:
    if judging_ids:
        s.execute(update(JudgingRow).where(JudgingRow.id.in_(judging_ids))
                  .values(enqueued_at=utcnow()))
