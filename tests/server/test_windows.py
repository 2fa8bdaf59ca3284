"""Per-user windows and extra time against real SQLite and PostgreSQL: who may submit when,
what the boards count, and when the system test may start."""

from __future__ import annotations

from datetime import timedelta

from judge.service import boards, contests, system_tests, times, windows
from judge.service.models import Contest, utcnow
from tests.server.conftest import refused
from tests.server.test_service import finish_with, submit


def totals(board: dict) -> dict[str, float]:
    return {row["name"]: row["total"] for row in board["rows"]}


def test_a_window_is_started_once_by_its_owner_and_closes_on_them_alone(s, config, world):
    now = utcnow()
    s.add(Contest(slug="cms", title="CMS-like", problems=["vector_add"], window_s=3600,
                  starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=5)))
    s.commit()
    contest, alice, bob = contests.get_contest(s, "cms"), world["alice"], world["bob"]
    assert windows.view(contest, None, alice)["state"] == "to_start"
    with refused(403, "start your time in cms first .* you then have 60 min"):
        submit(s, config, alice, contest_slug="cms")
    s.rollback()
    started = windows.start(s, contest, alice)
    s.commit()
    assert windows.view(contest, started, alice)["ends_at"] == times.aware(
        started.started_at) + timedelta(hours=1)
    with refused(409, "you started cms at"):
        windows.start(s, contest, alice)
    s.rollback()
    first, work = submit(s, config, alice, contest_slug="cms")
    finish_with(s, work.judging_id, "AC", 70)
    submit(s, config, world["admin"], contest_slug="cms")  # organizers need no window
    # her hour is over (as if she had started an hour ago): bob's is not even begun
    started.started_at = utcnow() - timedelta(hours=1, seconds=1)
    first.created_at = utcnow() - timedelta(minutes=30)
    windows.refresh(s, contest)
    s.commit()
    with refused(403, "your time in cms ended at"):
        submit(s, config, alice, contest_slug="cms")
    s.rollback()
    assert totals(boards.results(s, contest).board) == {"alice": 70}
    windows.start(s, contest, bob)
    s.commit()
    submit(s, config, bob, contest_slug="cms")


def test_extra_time_lets_one_user_submit_past_the_end_and_the_system_test_waits(
        s, config, world):
    now = utcnow()
    s.add(Contest(slug="cup", title="Cup", problems=["vector_add"],
                  starts_at=now - timedelta(hours=2), ends_at=now + timedelta(hours=1)))
    s.commit()
    contest, alice, bob = contests.get_contest(s, "cup"), world["alice"], world["bob"]
    late, work = submit(s, config, alice, contest_slug="cup")
    finish_with(s, work.judging_id, "AC", 80)
    windows.give_extra(s, contest, bob, 1800)
    # the contest ends (as if an hour passed); bob has half an hour more
    contest.starts_at, contest.ends_at = now - timedelta(hours=3), now - timedelta(minutes=1)
    windows.refresh(s, contest)
    s.commit()
    with refused(403, "contest cup is ended"):
        submit(s, config, alice, contest_slug="cup")
    s.rollback()
    mine, work = submit(s, config, bob, contest_slug="cup")
    finish_with(s, work.judging_id, "AC", 60)
    # alice's, made after the end (her time has no extra), counts nowhere; bob's counts
    late.created_at = utcnow()
    s.commit()
    assert totals(boards.results(s, contest).board) == {"bob": 60}
    assert system_tests.start_due_system_tests(s, config) == []  # bob's time still runs
    assert boards.latest_system_test(s, contest) is None
    windows.give_extra(s, contest, bob, 0)  # taken away: what he made after the end goes too
    s.commit()
    assert windows.latest_end(s, contest) <= utcnow()
    assert totals(boards.results(s, contest).board) == {}
    system_tests.start_due_system_tests(s, config)
    assert boards.latest_system_test(s, contest) is not None


def test_a_window_starts_only_in_a_running_contest_that_has_windows(s, config, world):
    now = utcnow()
    s.add(Contest(slug="plain", title="P", problems=["vector_add"]))
    s.add(Contest(slug="later", title="L", problems=["vector_add"], window_s=600,
                  starts_at=now + timedelta(hours=1)))
    s.commit()
    with refused(409, "plain has one window for everyone"):
        windows.start(s, contests.get_contest(s, "plain"), world["alice"])
    with refused(403, "contest later is not started"):
        windows.start(s, contests.get_contest(s, "later"), world["alice"])
    with refused(422, "zero seconds or more"):
        windows.give_extra(s, contests.get_contest(s, "plain"), world["alice"], -5)
