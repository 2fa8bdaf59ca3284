"""Taking a submission: the checks it passes before it is stored (its problem, contest,
language, window, sanctions, the rate per minute and the contest's quotas per mode), and reading
submissions: whose a user reads, and each one's current judging.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import and_, func, or_, select, true, update
from sqlalchemy.orm import Session, joinedload, selectinload

from judge.judging.admission import SubmissionRejected, admit
from judge.service import sanctions, windows
from judge.service.catalog import get_shown_problem
from judge.service.contests import visible_contest
from judge.service.errors import ServiceError
from judge.service.models import Contest, JudgingRow, ProblemRow, Submission, User, utcnow
from judge.service.queueing import DONE, Enqueue, queue_device, queue_of
from judge.service.times import aware
from judge.settings import Settings
from judge.verdicts import PROFILE, RANKED, SUBMISSION_MODES


def submit(s: Session, settings: Settings, user: User, problem_slug: str, language: str,
           source: str, contest_slug: str | None = None,
           mode: str = RANKED) -> tuple[Submission, Enqueue]:
    if mode not in SUBMISSION_MODES:
        raise ServiceError(422, f"mode {mode!r}: use one of {', '.join(SUBMISSION_MODES)}")
    problem = get_shown_problem(s, problem_slug, user)
    contest = visible_contest(s, contest_slug, user) if contest_slug else None
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
    _one_at_a_time(s, user)
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


def _one_at_a_time(s: Session, user: User) -> None:
    """This user's submissions counted and stored one at a time, until the transaction ends: a
    write to the user's row (no change) takes its row lock on PostgreSQL and the database's
    write lock on SQLite before the counts below, so that parallel requests cannot all count
    the same past (20 at once took 2 of a quota of one and 13 of a limit of 10 a minute)."""
    s.execute(update(User).where(User.id == user.id).values(id=User.id)
              .execution_options(synchronize_session=False))


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
