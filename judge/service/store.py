"""The service's domain logic, independent of HTTP: users, problems, submissions, judgings,
rejudges, the leaderboard and the janitor that makes sure no accepted submission is lost.

The database is the source of truth. A judging is QUEUED until a worker claims it with a fresh
claim token; only the holder of the current token can move it on or finish it, so a judging
finishes exactly once even when a worker dies and another picks it up.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property

from sqlalchemy import and_, case, func, not_, or_, select, true, update
from sqlalchemy.orm import Session, joinedload, selectinload

import judge
from judge.judging.admission import SubmissionRejected, admit, device_kinds
from judge.judging.record import JudgeResult
from judge.problem.schema import ProblemError, load_problem, problem_folders
from judge.service import audit, metrics, sanctions, windows
from judge.service.contests import get_contest
from judge.service.counters import results_changed, results_version
from judge.service.errors import ServiceError
from judge.service.models import (
    Contest,
    JudgingRow,
    ProblemRow,
    Rejudge,
    Submission,
    User,
    record_columns,
    utcnow,
)
from judge.service.times import aware
from judge.settings import Settings
from judge.verdicts import PROFILE, RANKED, SUBMISSION_MODES, State, Verdict

log = logging.getLogger("kjudge.service")
DONE = State.DONE.value
QUEUED = State.QUEUED.value


# -- problems and contests -------------------------------------------------------------------
def sync_problems(s: Session, settings: Settings) -> dict[str, list[str]]:
    """Load every folder under the problems directory; returns the issues of invalid ones."""
    invalid: dict[str, list[str]] = {}
    seen = set()
    for folder in problem_folders(settings.problems_dir):
        try:
            problem = load_problem(folder)
        except ProblemError as exc:
            invalid[folder.name] = [str(i) for i in exc.issues]
            continue
        seen.add(problem.slug)
        row = s.scalar(select(ProblemRow).where(ProblemRow.slug == problem.slug))
        if row is None:
            row = ProblemRow(slug=problem.slug)
            s.add(row)
        row.title, row.version, row.path = problem.spec.title, problem.version, str(problem.path)
        row.languages, row.active, row.loaded_at = list(problem.spec.languages), True, utcnow()
        row.source_kb, row.devices = problem.spec.limits.source_kb, list(device_kinds(problem))
    for row in s.scalars(select(ProblemRow).where(ProblemRow.slug.not_in(seen))):
        row.active = False
    return invalid


def get_problem(s: Session, slug: str) -> ProblemRow:
    row = s.scalar(select(ProblemRow).where(ProblemRow.slug == slug, ProblemRow.active))
    if row is None:
        raise ServiceError(404, f"no problem {slug!r}; GET /api/problems lists them")
    return row


CONTEST_TIMES = ("starts_at", "freeze_at", "ends_at", "thaw_at")  # in the order they must come


def configure_contest(contest: Contest, fields: dict) -> None:
    """Set a contest's fields (a new one's, or a PATCH's); `thaw_after_end_s` sets `thaw_at`
    from the end. Its times must come in order: start < freeze < end <= thaw."""
    thaw_after = fields.pop("thaw_after_end_s", None)
    if fields.get("freeze_at") is not None:
        contest.unfrozen_at = None  # a new freeze: the board published before freezes again
    for name, value in fields.items():
        if name in CONTEST_TIMES and value is not None:  # stored in UTC (SQLite keeps no offset)
            value = aware(value).astimezone(timezone.utc)
        setattr(contest, name, value)
    if thaw_after is not None:
        if contest.ends_at is None:
            raise ServiceError(422, "thaw_after_end_s counts from ends_at: set ends_at too")
        contest.thaw_at = aware(contest.ends_at) + timedelta(seconds=thaw_after)
    times = [(name, aware(getattr(contest, name))) for name in CONTEST_TIMES
             if getattr(contest, name) is not None]
    for (first, a), (then, b) in zip(times, times[1:]):
        if b < a or (b == a and then != "thaw_at"):
            raise ServiceError(422, f"{then} must come after {first}: the times go "
                                    + " < ".join(CONTEST_TIMES).replace("< thaw", "<= thaw"))


# -- submissions and judgings -----------------------------------------------------------------
@dataclass(frozen=True)
class Enqueue:
    """A judging to publish to the broker once the transaction that created it has committed."""

    judging_id: int
    queue: str
    rejudge: bool


def queue_device(settings: Settings, contest: Contest | None) -> str:
    """The device a submission is judged on: its contest's, else the settings' (cuda.h100, …)."""
    return contest.device if contest else settings.queue_device


def queue_of(settings: Settings, device: str) -> str:
    kind, _, model = device.partition(".")
    return settings.queue_for(kind, model)


def submit(s: Session, settings: Settings, user: User, problem_slug: str, language: str,
           source: str, contest_slug: str | None = None,
           mode: str = RANKED) -> tuple[Submission, Enqueue]:
    if mode not in SUBMISSION_MODES:
        raise ServiceError(422, f"mode {mode!r}: use one of {', '.join(SUBMISSION_MODES)}")
    problem = get_problem(s, problem_slug)
    contest = get_contest(s, contest_slug) if contest_slug else None
    device = queue_device(settings, contest)
    try:  # a contest without its own language list allows the problem's
        admit(problem.terms(), language, source, device.partition(".")[0],
              allowed=(contest.languages or None) if contest else None,
              max_source_kb=settings.max_source_kb)
    except SubmissionRejected as exc:
        raise ServiceError(exc.status, str(exc)) from None
    if contest:
        windows.refuse_outside(s, contest, user)
        if problem.slug not in contest.problems:
            raise ServiceError(404, f"problem {problem.slug} is not part of {contest.slug}")
    if mode == PROFILE:
        _refuse_unprofilable(contest, device)
    sanctions.refuse_barred(s, user, contest)
    _check_rate(s, settings, user)
    if contest is not None and not user.is_admin:
        _check_quota(s, user, contest, problem, mode)
    submission = Submission(user_id=user.id, problem_id=problem.id, language=language,
                            source=source, contest_id=contest.id if contest else None,
                            mode=mode)
    s.add(submission)
    s.flush()
    judging = JudgingRow(submission_id=submission.id, queue=queue_of(settings, device))
    s.add(judging)
    s.flush()
    return submission, Enqueue(judging.id, judging.queue, False)


def _check_rate(s: Session, settings: Settings, user: User) -> None:
    if user.is_admin:
        return
    since = utcnow() - timedelta(minutes=1)
    recent = s.scalar(select(func.count(Submission.id)).where(
        Submission.user_id == user.id, Submission.created_at >= since))
    if recent >= settings.submissions_per_minute:
        raise ServiceError(429, f"at most {settings.submissions_per_minute} submissions a "
                                "minute; wait and submit again", retry_after_s=60)


HOUR = timedelta(hours=1)
PROFILED_DEVICES = ("cuda",)  # where Nsight Compute runs


def _refuse_unprofilable(contest: Contest | None, device: str) -> None:
    if contest is None or not contest.profile:
        raise ServiceError(403, "profile submissions are taken only in a contest that allows "
                                "them (its `profile` setting)")
    if device.partition(".")[0] not in PROFILED_DEVICES:
        raise ServiceError(422, f"profiling needs an NVIDIA GPU: {contest.slug} is judged on "
                                f"{device}")


def _check_quota(s: Session, user: User, contest: Contest, problem: ProblemRow,
                 mode: str) -> None:
    """The contest's caps on this user's submissions of this mode to this problem (CMS's
    submission limits): a 429 that says when the next is taken."""
    quota = (contest.quotas or {}).get(mode) or {}
    per_hour, per_contest = quota.get("per_hour"), quota.get("per_contest")
    if per_hour is None and per_contest is None:
        return
    what = f"{mode} submissions to {problem.slug} in {contest.slug}"
    if 0 in (per_hour, per_contest):
        raise ServiceError(403, f"{contest.slug} takes no {mode} submissions")
    mine = select(Submission.created_at).where(
        Submission.user_id == user.id, Submission.contest_id == contest.id,
        Submission.problem_id == problem.id, Submission.mode == mode)
    if per_contest is not None and s.scalar(select(func.count()).select_from(
            mine.subquery())) >= per_contest:
        raise ServiceError(429, f"at most {per_contest} {what}: none left")
    if per_hour is not None:
        recent = s.scalars(mine.where(Submission.created_at >= utcnow() - HOUR)
                           .order_by(Submission.created_at)).all()
        if len(recent) >= per_hour:
            again = aware(recent[len(recent) - per_hour]) + HOUR
            raise ServiceError(429, f"at most {per_hour} {what} an hour; the next at "
                                    f"{again.isoformat(timespec='seconds')}",
                               retry_after_s=max((again - utcnow()).total_seconds(), 1.0))


def quota_left(s: Session, user: User, contest: Contest, problem: ProblemRow) -> dict:
    """Per capped mode: what this user has left on this problem, this hour and in all."""
    left = {}
    for mode, quota in (contest.quotas or {}).items():
        mine = select(func.count(Submission.id)).where(
            Submission.user_id == user.id, Submission.contest_id == contest.id,
            Submission.problem_id == problem.id, Submission.mode == mode)
        entry = {}
        if quota.get("per_hour") is not None:
            used = s.scalar(mine.where(Submission.created_at >= utcnow() - HOUR))
            entry["this_hour"] = max(quota["per_hour"] - used, 0)
        if quota.get("per_contest") is not None:
            entry["in_contest"] = max(quota["per_contest"] - s.scalar(mine), 0)
        left[mode] = entry
    return left


def with_results(query):
    """Load the judgings, user and problem of each submission in a few queries, not one per row
    (leaderboard and problem lists are polled by every open page)."""
    return query.options(selectinload(Submission.judgings), joinedload(Submission.user),
                         joinedload(Submission.problem))


def current_judging(submission: Submission) -> JudgingRow | None:
    """The latest finished judging: the submission's one current result.

    A system error is never scored as a loss: an SE judging does not replace an earlier real
    verdict (it stays in the history, flagged); it is current only when nothing else is.
    """
    return current_of(j for j in submission.judgings if j.valid)


def current_of(judgings) -> JudgingRow | None:
    """`current_judging`'s rule over these judgings (in id order)."""
    done = [j for j in judgings if j.state == DONE]
    real = [j for j in done if j.verdict != "SE"]
    return (real or done or [None])[-1]


def latest_judging(submission: Submission) -> JudgingRow | None:
    """The latest valid judging (a staged rejudge's is not the submission's until applied)."""
    valid = [j for j in submission.judgings if j.valid]
    return valid[-1] if valid else None


def get_submission(s: Session, user: User, submission_id: int) -> Submission:
    submission = s.scalar(select(Submission).where(Submission.id == submission_id,
                                                   readable_by(user)))
    if submission is None:
        raise ServiceError(404, f"no submission {submission_id}")
    return submission


# -- claims (workers) -----------------------------------------------------------------------
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


# -- the janitor ----------------------------------------------------------------------------
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


# -- rejudges -------------------------------------------------------------------------------
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


# -- system tests ---------------------------------------------------------------------------
SYSTEM_TEST = "system_test"  # a Rejudge's kind


def latest_system_test(s: Session, contest: Contest) -> Rejudge | None:
    return s.scalar(select(Rejudge).where(Rejudge.kind == SYSTEM_TEST,
                                          Rejudge.contest_id == contest.id)
                    .order_by(Rejudge.id.desc()).limit(1))


def system_test(s: Session, settings: Settings, contest: Contest, admin: User,
                reason: str = "") -> tuple[Rejudge, list[Enqueue]]:
    """Judge again, on fresh secret seeds, the submission each row counts for each problem (as
    Codeforces' system tests and GPU MODE's secret-seed rerun do), interleaved (rank by rank,
    problem by problem) on the contest device's system-test queue, which one worker per device
    kind drains (`kjudge worker --system-tests`): all leaders timed on one machine. The final
    board counts, for each row and problem it covered, that submission's new judging only."""
    board = results(s, contest).board
    rank = {key_of(row): row["rank"] for row in board["rows"]}
    best: dict[tuple[bool, str, str], tuple[float, int]] = {}
    for _, name, team, slug, score, _, submission_id in current_accepted(s, contest):
        key = (*row_key(contest, name, team), slug)
        if slug in contest.problems and (key not in best or score > best[key][0]):
            best[key] = (score, submission_id)  # oldest first: a tie keeps the first
    order = sorted(best, key=lambda k: (rank.get(k[:2]) or 0, contest.problems.index(k[2])))
    record = Rejudge(reason=reason or f"system test of {contest.slug}", created_by=admin.id,
                     filters={"contest": contest.slug}, kind=SYSTEM_TEST, contest_id=contest.id,
                     before={"rows": [{k: row[k] for k in ("name", "team", "rank", "total",
                                                           "problems") if k in row}
                                      for row in board["rows"]]},
                     covered=[[*key, best[key][1]] for key in order])
    s.add(record)
    s.flush()
    queue = queue_of(settings, contest.device) + SYSTEM_TEST_QUEUE
    work = []
    for key in order:
        judging = JudgingRow(submission_id=best[key][1], queue=queue, rejudge_id=record.id)
        s.add(judging)
        s.flush()
        work.append(Enqueue(judging.id, queue, True))
    results_changed(s)  # the board counts the covered submissions only from now on
    return record, work


def first_admin(s: Session) -> User | None:
    return s.scalar(select(User).where(User.role == "admin").order_by(User.id).limit(1))


def start_due_system_tests(s: Session, settings: Settings) -> list[Enqueue]:
    """The janitor's part: the system test of every contest that has ended with one due, on
    behalf of the first organizer."""
    admin = first_admin(s)
    if admin is None:
        return []
    tested = select(Rejudge.contest_id).where(Rejudge.kind == SYSTEM_TEST,
                                              Rejudge.contest_id.is_not(None))
    due = s.scalars(select(Contest).where(Contest.system_test.is_(True),
                                          Contest.ends_at.is_not(None),
                                          Contest.ends_at <= utcnow(),
                                          Contest.id.not_in(tested))).all()
    work = []
    for contest in due:
        if windows.latest_end(s, contest) > utcnow():  # someone's extra time still runs
            continue
        log.info("system test of contest %s: it ended at %s", contest.slug, contest.ends_at)
        audit.record(s, None, "contest.system_test", contest.slug, reason="it ended")
        work += system_test(s, settings, contest, admin, f"{contest.slug} ended")[1]
    return work


def system_test_report(s: Session, contest: Contest) -> dict:
    """The latest system test: its progress, and per board row before and after (rank, total,
    and each problem's score)."""
    tested = latest_system_test(s, contest)
    if tested is None:
        raise ServiceError(404, f"contest {contest.slug!r} has had no system test (POST "
                                f"/api/contests/{contest.slug}/system-test starts one)")
    after = {key_of(row): row for row in results(s, contest).board["rows"]}
    rows = []
    for before in tested.before["rows"]:
        now = after.get(key_of(before)) or {}
        rows.append({"name": before["name"], "team": before.get("team", False),
                     "before": {"rank": before["rank"], "total": before["total"]},
                     "after": {"rank": now.get("rank"), "total": now.get("total", 0.0)},
                     "problems": {slug: [before["problems"].get(slug),
                                         (now.get("problems") or {}).get(slug)]
                                  for slug in contest.problems}})
    return {"id": tested.id, "reason": tested.reason, "created_at": aware(tested.created_at),
            **rejudge_progress(s, tested.id), "rows": rows}


# -- problem statistics ---------------------------------------------------------------------
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


def contest_frozen(contest: Contest, now: datetime | None = None) -> bool:
    """Whether all but organizers see the contest's board as it stood at its freeze: from
    `freeze_at` until `thaw_at` or until an organizer publishes it (`unfreeze`)."""
    now = now or utcnow()
    return (contest.freeze_at is not None and now >= aware(contest.freeze_at)
            and contest.unfrozen_at is None
            and (contest.thaw_at is None or now < aware(contest.thaw_at)))


def frozen_cuts(s: Session) -> tuple[tuple[int, datetime], ...]:
    """(contest id, freeze time) of every contest frozen now: what boards and solver counts
    leave out for all but organizers, whichever board they read."""
    contests = s.scalars(select(Contest).where(Contest.freeze_at.is_not(None),
                                               Contest.unfrozen_at.is_(None))).all()
    return tuple((c.id, aware(c.freeze_at)) for c in contests if contest_frozen(c))


def unfreeze(contest: Contest) -> None:
    """Publish the final board now."""
    if contest.freeze_at is None:
        raise ServiceError(409, f"contest {contest.slug} has no freeze")
    contest.unfrozen_at = utcnow()


def readable_by(user: User):
    """The one rule of whose sources a user reads (a condition on Submission): organizers all,
    others their own, and in a contest ranked by teams their teammates' made in it."""
    if user.is_admin:
        return true()
    own = Submission.user_id == user.id
    if not user.team:
        return own
    teammates = select(User.id).where(User.team == user.team)
    team_contests = select(Contest.id).where(Contest.teams.is_(True))
    return or_(own, and_(Submission.user_id.in_(teammates),
                         Submission.contest_id.in_(team_contests)))


def _in_contest(query, contest: Contest, before: datetime | None = None):
    query = query.where(Submission.contest_id == contest.id)
    if contest.starts_at:
        query = query.where(Submission.created_at >= contest.starts_at)
    query = windows.within(query, contest)  # each author's own end (extra time, a window)
    if before is not None:
        query = query.where(Submission.created_at < before)
    return query


def _cut(query, cuts: tuple[tuple[int, datetime], ...]):
    for contest_id, freeze_at in cuts:
        query = query.where(or_(Submission.contest_id.is_(None),
                                Submission.contest_id != contest_id,
                                Submission.created_at < freeze_at))
    return query


def held_for_review():
    """Which judgings are held off the boards (a condition on JudgingRow, with Contest
    outer-joined on the submission's): on the review list, no organizer has decided, and its
    contest holds flagged results (submissions outside a contest: always)."""
    return and_(JudgingRow.review.is_(True), JudgingRow.decision.is_(None),
                func.coalesce(Contest.hold_flagged, true()))


def counts_on_boards():
    """The one rule of which current judgings a board counts (the same join): ranked
    submissions' only, none disqualified, none held for review, none an organizer's sanction
    leaves off (`sanctions.counted`: ignored, or its author disqualified from its contest)."""
    return and_(or_(JudgingRow.decision.is_(None), JudgingRow.decision != DISQUALIFIED),
                not_(held_for_review()), sanctions.counted(), Submission.mode == RANKED)


def held(s: Session, judging: JudgingRow) -> bool:
    """Whether `held_for_review` holds this judging (only one on the review list can be)."""
    if not judging.review:
        return False
    return bool(s.scalar(select(held_for_review()).select_from(JudgingRow)
                         .join(Submission, Submission.id == JudgingRow.submission_id)
                         .outerjoin(Contest, Contest.id == Submission.contest_id)
                         .where(JudgingRow.id == judging.id)))


def current_accepted(s: Session, contest: Contest | None = None, before: datetime | None = None,
                     cuts: tuple[tuple[int, datetime], ...] = (),
                     rejudge: tuple[int, bool] | None = None):
    """(user id, user name, team, problem slug, score, submitted at, submission id) of every
    submission whose current judging (see `current_judging`, the same rule in SQL) is AC and
    counts on boards (`counts_on_boards`), oldest first: what the leaderboard and the problem
    list count; only those made before `before`, and none of a frozen contest's since its
    freeze (`cuts`); `rejudge` (id, counted): as if that rejudge's judgings counted, or as if it
    had never run (a rejudge's diff). One aggregate query over the judgings, instead of loading
    every submission with its history (~10 ms at 10,000 submissions on PostgreSQL)."""
    done = JudgingRow.state == DONE
    latest = (select(JudgingRow.submission_id,
                     func.max(case((JudgingRow.verdict != "SE", JudgingRow.id))).label("real"),
                     func.max(JudgingRow.id).label("any"))
              .where(done, _valid(rejudge)).group_by(JudgingRow.submission_id).subquery())
    query = (select(User.id, User.name, User.team, ProblemRow.slug, JudgingRow.score,
                    Submission.created_at, Submission.id)
             .select_from(latest)
             .join(JudgingRow, JudgingRow.id == func.coalesce(latest.c.real, latest.c.any))
             .join(Submission, Submission.id == latest.c.submission_id)
             .join(User, User.id == Submission.user_id)
             .join(ProblemRow, ProblemRow.id == Submission.problem_id)
             .outerjoin(Contest, Contest.id == Submission.contest_id)
             .where(JudgingRow.verdict == "AC", counts_on_boards())
             .order_by(Submission.created_at, Submission.id))
    if contest is not None:
        query = _in_contest(query, contest, before)
    return s.execute(_cut(query, cuts)).all()


def _valid(rejudge: tuple[int, bool] | None):
    """Which judgings are results: the valid ones, or with `rejudge` (id, counted) as if that
    rejudge's judgings counted (staged ones too), or as if it had never run."""
    if rejudge is None:
        return JudgingRow.valid
    rejudge_id, counted = rejudge
    if counted:
        return or_(JudgingRow.valid, JudgingRow.rejudge_id == rejudge_id)
    return and_(JudgingRow.valid, or_(JudgingRow.rejudge_id.is_(None),
                                      JudgingRow.rejudge_id != rejudge_id))


def pending_since(s: Session, contest: Contest) -> dict[RowKey, dict]:
    """Per board row (user, or team): the submissions made since the freeze, per problem, whose
    results the frozen board does not show, and who made them."""
    query = _in_contest(select(User.name, User.team, ProblemRow.slug, func.count(Submission.id))
                        .join(User, User.id == Submission.user_id)
                        .join(ProblemRow, ProblemRow.id == Submission.problem_id), contest)
    query = query.where(Submission.created_at >= contest.freeze_at, Submission.mode == RANKED,
                        sanctions.counted()).group_by(
        User.name, User.team, ProblemRow.slug)
    pending: dict[RowKey, dict] = {}
    for name, team, slug, count in s.execute(query):
        row = pending.setdefault(row_key(contest, name, team), {"problems": {}, "members": set()})
        row["problems"][slug] = row["problems"].get(slug, 0) + count
        row["members"].add(name)
    return pending


RowKey = tuple[bool, str]  # (a team's row, its name): a team and a user may share a name


def row_key(contest: Contest | None, name: str, team: str | None) -> RowKey:
    """The board row a user's results count in: the team's in a contest ranked by teams."""
    if contest is not None and contest.teams and team:
        return True, team
    return False, name


def key_of(row: dict) -> RowKey:
    return row.get("team", False), row["name"]


def find_row(rows: list[dict], key: RowKey) -> dict | None:
    return next((row for row in rows if key_of(row) == key), None)


SERIES_ROWS = 10  # the leading rows whose total over time the board carries (the page's chart)


@dataclass
class Results:
    """What the leaderboard and the problem list show, computed from `current_accepted` once per
    change of the results (see `results`)."""

    key: tuple
    board: dict  # problems, rows (see _compute_results)
    solvers: dict[str, int]  # problem slug -> users with an accepted submission
    best: dict[int, dict[str, float]]  # user id -> problem slug -> best score

    @cached_property
    def board_json(self) -> bytes:
        """The board as JSON, encoded once (~3 ms for 200 teams here, more than the rest of a
        request); the API adds each reader's own part in front."""
        return json.dumps(self.board, separators=(",", ":"), allow_nan=False).encode()


_RESULTS: dict[tuple, Results] = {}  # (database, contest id, view) -> the latest computed
_RESULTS_LOCK = threading.Lock()


def results(s: Session, contest: Contest | None = None, live: bool = True) -> Results:
    """The results as they stand, recomputed only when they changed: every page polls the
    leaderboard, which costs one aggregate over all judgings (~80 ms at 10,000 submissions on
    this VM) against one counter row that every judging's end moves in its own transaction
    (`results_changed`); the problem set and the contest's own settings are part of the key.

    `live=False` is what all but organizers see: a frozen contest's board as it stood at its
    freeze (with the submissions pending since), and no board or count showing what frozen
    contests' submissions did since their freeze."""
    problems = board_problems(s, contest)
    window = (contest.id, contest.starts_at, contest.ends_at, contest.teams,
              contest.hold_flagged) if contest else None
    cuts = () if live else frozen_cuts(s)
    live = not cuts  # nothing frozen: everyone's results are the live ones (one cache entry)
    frozen = contest is not None and any(cid == contest.id for cid, _ in cuts)
    # a frozen board counts the submissions pending since the freeze: new ones change it too
    newest = s.scalar(select(func.max(Submission.id))) if frozen else None
    tested = latest_system_test(s, contest) if contest is not None else None
    key = (results_version(s), problems, window, cuts, newest, tested.id if tested else None)
    cache_key = (str(s.get_bind().url), contest.id if contest else None, live)
    with _RESULTS_LOCK:
        cached = _RESULTS.get(cache_key)
    if cached is not None and cached.key == key:
        return cached
    accepted = current_accepted(s, contest, cuts=() if frozen else cuts,
                                before=aware(contest.freeze_at) if frozen else None)
    computed = _compute_results(key, contest, list(problems), accepted, _covered(tested))
    if frozen:
        computed.board["frozen_at"] = aware(contest.freeze_at).isoformat()
        pending = pending_since(s, contest)
        rows = computed.board["rows"]
        for row in rows:
            row["pending"] = pending.pop(key_of(row), {"problems": {}})["problems"]
        # who has submitted only since the freeze is on the board too, unranked, so that
        # their pending submissions show
        for (is_team, name), since in sorted(pending.items(), key=lambda item: item[0][1]):
            row = {"name": name, "total": 0.0, "reached_at": None, "problems": {},
                   "rank": None, "pending": since["problems"]}
            if contest.teams:
                row.update(team=is_team, members=sorted(since["members"]))
            rows.append(row)
    with _RESULTS_LOCK:
        _RESULTS[cache_key] = computed
    return computed


def board_problems(s: Session, contest: Contest | None) -> tuple[str, ...]:
    return tuple(contest.problems if contest else sorted(
        s.scalars(select(ProblemRow.slug).where(ProblemRow.active)).all()))


def _covered(tested: Rejudge | None) -> dict | None:
    """A system test's (row is a team, row name, problem) -> the submission it judged again."""
    return ({(bool(is_team), name, slug): submission_id
             for is_team, name, slug, submission_id in tested.covered} if tested else None)


def board_as_if(s: Session, contest: Contest | None, rejudge: tuple[int, bool]) -> dict:
    """The live board as if a rejudge's judgings counted, or as if it had never run (`rejudge`:
    (id, counted)); computed afresh, not cached: a rejudge's diff."""
    tested = latest_system_test(s, contest) if contest is not None else None
    accepted = current_accepted(s, contest, rejudge=rejudge)
    return _compute_results((), contest, list(board_problems(s, contest)), accepted,
                            _covered(tested)).board


def _compute_results(key: tuple, contest: Contest | None, problems: list[str],
                     accepted, covered: dict | None = None) -> Results:
    """Per row (a user, or a team in a contest ranked by teams): best valid AC score per
    problem (across languages and members), total, rank, and for the leading rows the total
    over time.

    Correctness is a hard gate: only AC judgings count. Ties on the total are broken by the time
    the total was first reached (the latest of the per-problem first-best times). After a
    system test (`covered`: (row is a team, row name, problem) -> the submission it judged
    again), a row's problem counts that submission only.
    """
    best: dict[RowKey, dict[str, tuple[float, datetime]]] = {}
    members: dict[RowKey, set[str]] = {}
    series: dict[RowKey, list] = {}
    solvers: dict[str, set[int]] = {}
    by_user: dict[int, dict[str, float]] = {}
    for user_id, name, team, slug, score, created_at, submission_id in accepted:
        row = row_key(contest, name, team)
        if covered is not None and covered.get((*row, slug), submission_id) != submission_id:
            continue
        solvers.setdefault(slug, set()).add(user_id)
        mine = by_user.setdefault(user_id, {})
        mine[slug] = max(mine.get(slug, 0.0), score)
        if slug not in problems:
            continue
        members.setdefault(row, set()).add(name)
        per_row = best.setdefault(row, {})
        previous = per_row.get(slug)
        if previous is None or score > previous[0]:
            per_row[slug] = (score, aware(created_at))
            total = sum(score for score, _ in per_row.values())
            series.setdefault(row, []).append([aware(created_at).isoformat(), total])
    rows = []
    for (is_team, name), scores in best.items():
        total = sum(score for score, _ in scores.values())
        reached = max(moment for _, moment in scores.values())
        row = {"name": name, "total": total, "reached_at": reached,
               "problems": {p: scores[p][0] for p in problems if p in scores},
               # when each problem's best was first reached (the CCS scoreboard's times)
               "times": {p: scores[p][1].isoformat() for p in problems if p in scores}}
        if contest is not None and contest.teams:
            row.update(team=is_team, members=sorted(members[is_team, name]))
        rows.append(row)
    rows.sort(key=lambda r: (-r["total"], r["reached_at"], r["name"]))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
        row["reached_at"] = row["reached_at"].isoformat()  # ready for json.dumps as it is
        if rank <= SERIES_ROWS:
            row["series"] = series[key_of(row)]
    board = {"problems": problems, "rows": rows, "teams": bool(contest and contest.teams)}
    return Results(key, board, {slug: len(users) for slug, users in solvers.items()}, by_user)


def problem_stats(s: Session, user: User | None) -> dict[str, dict]:
    """Per problem: how many users have an accepted submission, and this user's best score."""
    found = results(s, live=user is not None and user.is_admin)
    # one's own results are never frozen for oneself
    mine = results(s, live=True).best.get(user.id, {}) if user is not None else {}
    return {slug: {"solvers": found.solvers.get(slug, 0), "best_score": mine.get(slug)}
            for slug in found.solvers.keys() | mine.keys()}
