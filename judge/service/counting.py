"""Which judgings the boards count: a submission's current judging (the same rule as
`submissions.current_judging`, in SQL) when it is AC, ranked, not held for review, not
disqualified, and not left off by a sanction; within a contest, made in its time and before its
author's own end; none of a frozen contest's since its freeze for all but organizers, nor its
system test's judgings (they belong to the final board). One aggregate query over the judgings
(judge/service/boards.py ranks what it returns).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, case, func, not_, or_, select, true
from sqlalchemy.orm import Session

from judge.service import sanctions, windows
from judge.service.models import Contest, JudgingRow, ProblemRow, Rejudge, Submission, User
from judge.service.queueing import DONE
from judge.service.reviews import DISQUALIFIED, held_for_review
from judge.verdicts import RANKED

SYSTEM_TEST = "system_test"  # a Rejudge's kind: after one, a board counts what it judged again


def in_contest(query, contest: Contest, before: datetime | None = None):
    """Submissions made in the contest, in its time and each before its author's own end."""
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


def counts_on_boards():
    """The one rule of which current judgings a board counts (the same join): ranked
    submissions' only, none disqualified, none held for review, none an organizer's sanction
    leaves off (`sanctions.counted`: ignored, or its author disqualified from its contest)."""
    return and_(or_(JudgingRow.decision.is_(None), JudgingRow.decision != DISQUALIFIED),
                not_(held_for_review()), sanctions.counted(), Submission.mode == RANKED)


def current_accepted(s: Session, contest: Contest | None = None, before: datetime | None = None,
                     cuts: tuple[tuple[int, datetime], ...] = (),
                     rejudge: tuple[int, bool] | None = None, untested: tuple[int, ...] = ()):
    """(user id, user name, team, problem slug, score, submitted at, submission id) of every
    submission whose current judging (see `current_judging`, the same rule in SQL) is AC and
    counts on boards (`counts_on_boards`), oldest first: what the leaderboard and the problem
    list count; only those made before `before`, and none of a frozen contest's since its
    freeze (`cuts`); `rejudge` (id, counted): as if that rejudge's judgings counted, or as if it
    had never run (a rejudge's diff); `untested`: contests whose system tests' judgings are left
    out (frozen ones: what a system test judged again shows on the final board only). One
    aggregate query over the judgings, instead of loading every submission with its history
    (~10 ms at 10,000 submissions on PostgreSQL)."""
    done = JudgingRow.state == DONE
    latest = (select(JudgingRow.submission_id,
                     func.max(case((JudgingRow.verdict != "SE", JudgingRow.id))).label("real"),
                     func.max(JudgingRow.id).label("any"))
              .where(done, _valid(rejudge), _not_system_tested(untested))
              .group_by(JudgingRow.submission_id).subquery())
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
        query = in_contest(query, contest, before)
    return s.execute(_cut(query, cuts)).all()


def _not_system_tested(contest_ids: tuple[int, ...]):
    """Judgings of no system test of these contests."""
    if not contest_ids:
        return true()
    tests = select(Rejudge.id).where(Rejudge.kind == SYSTEM_TEST,
                                     Rejudge.contest_id.in_(contest_ids))
    return or_(JudgingRow.rejudge_id.is_(None), JudgingRow.rejudge_id.not_in(tests))


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
