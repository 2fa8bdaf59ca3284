"""System tests: at a contest's end, the submission each board row counts for each
problem judged again on fresh secret seeds, interleaved on one machine; the final board counts
those judgings (judge/service/boards.py), and the report compares the rows before and after.
"""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.service import audit, windows
from judge.service.boards import key_of, latest_system_test, results, row_key
from judge.service.counters import results_changed
from judge.service.counting import SYSTEM_TEST, current_accepted
from judge.service.errors import ServiceError
from judge.service.models import Contest, JudgingRow, Rejudge, User, utcnow
from judge.service.queueing import SYSTEM_TEST_QUEUE, Enqueue, queue_of
from judge.service.rejudges import rejudge_progress
from judge.service.times import aware
from judge.settings import Settings

log = logging.getLogger("kjudge.service")


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
