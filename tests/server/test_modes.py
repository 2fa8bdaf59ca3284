"""Submission modes and contests' quotas against real SQLite and PostgreSQL: only ranked
submissions count; caps per mode, per user and problem, per hour and per contest, with when the
next is taken; the API's 429 and Retry-After in test_api.py, the worker's test mode end to end."""

from __future__ import annotations

from datetime import timedelta

from judge.service import boards, catalog, contests, submissions
from judge.service.models import Contest, Submission, utcnow
from tests.server.conftest import refused
from tests.server.test_service import finish_with, submit


def totals(board: dict) -> dict[str, float]:
    return {row["name"]: row["total"] for row in board["rows"]}


def test_only_ranked_submissions_count_on_any_board(s, config, world):
    s.add(Contest(slug="cup", title="Cup", problems=["vector_add"]))
    s.commit()
    for mode, score in (("test", 0), ("benchmark", 500), ("ranked", 90)):
        _, work = submit(s, config, world["alice"], contest_slug="cup", mode=mode)
        finish_with(s, work.judging_id, "AC", score)
    assert totals(boards.results(s, contests.get_contest(s, "cup")).board) == {"alice": 90}
    assert totals(boards.results(s).board) == {"alice": 90}
    assert boards.problem_stats(s, world["alice"])["vector_add"]["best_score"] == 90
    with refused(422, "mode 'fast': use one of ranked, benchmark, test"):
        submit(s, config, world["alice"], mode="fast")


def test_a_contests_quotas_cap_each_mode_per_hour_and_in_all(s, config, world):
    s.add(Contest(slug="cup", title="Cup", problems=["vector_add", "softmax"], quotas={
        "ranked": {"per_hour": 2, "per_contest": 3}, "benchmark": {"per_hour": 0}}))
    s.commit()
    contest, alice = contests.get_contest(s, "cup"), world["alice"]
    problem = catalog.get_problem(s, "vector_add")
    assert submissions.quota_left(s, alice, contest, problem) == {
        "ranked": {"this_hour": 2, "in_contest": 3}, "benchmark": {"this_hour": 0}}
    first, _ = submit(s, config, alice, contest_slug="cup")
    submit(s, config, alice, contest_slug="cup")
    with refused(429, "at most 2 ranked submissions to vector_add in cup an hour; the next at "
                      + (first.created_at + timedelta(hours=1)).isoformat()[:16]) as info:
        submit(s, config, alice, contest_slug="cup")
    s.rollback()
    assert 3500 < info.value.retry_after_s <= 3600
    # other problems, other modes, other users and organizers are not counted with them
    submit(s, config, alice, problem="softmax", contest_slug="cup")
    submit(s, config, alice, contest_slug="cup", mode="test")
    submit(s, config, world["bob"], contest_slug="cup")
    submit(s, config, world["admin"], contest_slug="cup")
    submit(s, config, world["admin"], contest_slug="cup")
    with refused(403, "cup takes no benchmark submissions"):
        submit(s, config, alice, contest_slug="cup", mode="benchmark")
    s.rollback()
    # an hour on, one more: the contest's cap of three
    for made in s.query(Submission).filter_by(user_id=alice.id, problem_id=problem.id):
        made.created_at = utcnow() - timedelta(hours=2)
    s.commit()
    submit(s, config, alice, contest_slug="cup")
    with refused(429, "at most 3 ranked submissions to vector_add in cup: none left"):
        submit(s, config, alice, contest_slug="cup")
    s.rollback()
    assert submissions.quota_left(s, alice, contest, problem)["ranked"] == {"this_hour": 1,
                                                                      "in_contest": 0}


PARALLEL = 50


def submit_in_parallel(config, user_name: str, contest_slug: str | None) -> tuple[int, list]:
    """PARALLEL submissions of one user at once, each in its own session and thread (as the
    API's worker threads take them): how many were stored, and the refusals."""
    import threading

    from judge.service import db
    from judge.service.errors import ServiceError
    from judge.service.models import User

    start, refusals, stored = threading.Barrier(PARALLEL), [], []

    def one() -> None:
        start.wait(timeout=60)  # before any connection: a pool smaller than PARALLEL waits
        try:
            with db.session(config.database_url) as mine:
                user = mine.query(User).filter_by(name=user_name).one()
                submissions.submit(mine, config, user, "vector_add", "cpp",
                                   'extern "C" void run_kernel() {}', contest_slug=contest_slug)
            stored.append(1)
        except ServiceError as exc:
            refusals.append(exc.status)

    threads = [threading.Thread(target=one) for _ in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(stored), refusals


def test_quotas_and_the_rate_limit_are_exact_under_parallel_submissions(s, config, world):
    """Issue 44: a quota of one ranked submission took 2 of 20 parallel requests, a limit of 10
    a minute 13 (counting before the insert, nothing between). The count and the insert are
    one user's at a time (a lock on the user's row): exactly the cap, on SQLite and
    PostgreSQL, the rest refused with 429."""
    from dataclasses import replace

    s.add(Contest(slug="cup", title="Cup", problems=["vector_add"],
                  quotas={"ranked": {"per_contest": 1}}))
    s.commit()
    stored, refusals = submit_in_parallel(config, "alice", "cup")
    assert (stored, set(refusals)) == (1, {429}), (stored, refusals)
    limited = replace(config, submissions_per_minute=10)
    stored, refusals = submit_in_parallel(limited, "bob", None)
    assert (stored, set(refusals)) == (10, {429}), (stored, refusals)
    s.expire_all()
    assert s.query(Submission).filter_by(user_id=world["bob"].id).count() == 10
