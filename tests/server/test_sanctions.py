"""Organizers' sanctions against real SQLite and PostgreSQL: an ignored submission, a
disqualified user or team, a banned user; what each keeps off the boards and out of the queue,
and lifting them. The API's side and the audit log are in test_api.py."""

from __future__ import annotations

from datetime import timedelta

from judge.service import accounts, boards, contests, sanctions, submissions, system_tests
from judge.service.models import AuditEntry, Contest, JudgingRow, utcnow
from tests.server.conftest import refused
from tests.server.test_service import _contest_with_results, finish_with, submit


def totals(board: dict) -> dict[str, float]:
    return {row["name"]: row["total"] for row in board["rows"]}


def test_an_ignored_submission_counts_nowhere_and_comes_back_when_lifted(s, config, world):
    contest, made = _contest_with_results(s, config, world)
    assert totals(boards.results(s, contest).board) == {"bob": 200, "alice": 120}
    ignored = sanctions.impose(s, world["admin"], "ignore", "shared with bob",
                               submission_id=made["alice120"].id)
    s.commit()
    # her earlier 80 counts; the cached boards follow at once, in the contest and outside it
    assert totals(boards.results(s, contest).board) == {"bob": 200, "alice": 80}
    assert totals(boards.results(s).board)["alice"] == 80
    assert boards.problem_stats(s, world["alice"])["vector_add"]["best_score"] == 80
    # it stays in the history, and the sanction that keeps it off is found for any list
    assert submissions.current_judging(made["alice120"]).score == 120
    assert sanctions.affecting(s, [made["alice120"], made["alice80"]]) == {
        made["alice120"].id: ignored}
    # the system test judges again what counts: her 80, not the ignored 120
    _, work = system_tests.system_test(s, config, contest, world["admin"])
    s.commit()
    judged = {s.get(JudgingRow, w.judging_id).submission_id for w in work}
    assert made["alice80"].id in judged and made["alice120"].id not in judged
    sanctions.lift(s, world["admin"], ignored.id, "bob wrote his own")
    s.commit()
    assert sanctions.affecting(s, [made["alice120"]]) == {}
    assert totals(boards.results(s).board)["alice"] == 120


def test_a_disqualified_user_counts_on_no_board_for_that_contest_and_submits_there_no_more(
        s, config, world):
    contest, made = _contest_with_results(s, config, world,
                                          starts_at=utcnow() - timedelta(hours=1))
    s.add(Contest(slug="other", title="Other", problems=["vector_add"]))
    s.commit()
    sanctions.impose(s, world["admin"], "disqualify", "two accounts", user="bob",
                     contest="final")
    s.commit()
    assert totals(boards.results(s, contest).board) == {"alice": 120}
    assert "bob" not in totals(boards.results(s).board)  # what he made there counts nowhere
    with refused(403, "disqualified from contest final: two accounts"):
        submit(s, config, world["bob"], contest_slug="final")
    s.rollback()
    # elsewhere he submits, and that counts
    _, work = submit(s, config, world["bob"], contest_slug="other")
    finish_with(s, work.judging_id, "AC", 50)
    assert totals(boards.results(s, contests.get_contest(s, "other")).board) == {"bob": 50}
    submit(s, config, world["alice"], contest_slug="final")  # alice is not touched


def test_a_disqualified_team_takes_every_member_off_and_keeps_them_out(s, config, world):
    world["alice"].team = world["bob"].team = "red"
    carol, _ = accounts.create_user(s, "carol", team="blue")
    s.commit()
    contest, made = _contest_with_results(s, config, world, teams=True)
    _, work = submit(s, config, carol, contest_slug="final")
    finish_with(s, work.judging_id, "AC", 10)
    assert totals(boards.results(s, contest).board) == {"red": 220, "blue": 10}
    with refused(404, "no user is in team 'green'"):
        sanctions.impose(s, world["admin"], "disqualify", "x", team="green", contest="final")
    sanctions.impose(s, world["admin"], "disqualify", "shared code", team="red",
                     contest="final")
    s.commit()
    assert totals(boards.results(s, contest).board) == {"blue": 10}
    for member in ("alice", "bob"):
        with refused(403, "shared code"):
            submit(s, config, world[member], contest_slug="final")
        s.rollback()
    submit(s, config, carol, contest_slug="final")


def test_a_banned_user_submits_nowhere_and_what_they_made_still_counts(s, config, world):
    _, work = submit(s, config, world["bob"])
    finish_with(s, work.judging_id, "AC", 70)
    with refused(422, "organizer"):
        sanctions.impose(s, world["admin"], "ban", "x", user="root")
    ban = sanctions.impose(s, world["admin"], "ban", "abusive messages", user="bob")
    s.commit()
    with refused(403, "banned from submitting: abusive"):
        submit(s, config, world["bob"])
    s.rollback()
    assert totals(boards.results(s).board) == {"bob": 70}
    sanctions.lift(s, world["admin"], ban.id, "apologised")
    s.commit()
    submit(s, config, world["bob"])


def test_sanctions_need_a_reason_a_target_that_exists_and_no_twin(s, config, world):
    admin = world["admin"]
    submission, _ = submit(s, config, world["alice"])
    s.add(Contest(slug="final", title="F", problems=["vector_add"]))
    s.commit()
    for kind, reason, target, status, fragment in [
            ("kick", "r", {"user": "bob"}, 422, "use one of ignore, disqualify, ban"),
            ("ignore", "  ", {"submission_id": submission.id}, 422, "needs a reason"),
            ("ignore", "r", {}, 422, "ignore names a submission"),
            ("ignore", "r", {"submission_id": submission.id, "user": "bob"}, 422,
             "not a user"),
            ("ignore", "r", {"submission_id": 999}, 404, "no submission 999"),
            ("ban", "r", {"user": "nobody"}, 404, "no user 'nobody'"),
            ("disqualify", "r", {"user": "bob"}, 422, "names a contest"),
            ("disqualify", "r", {"user": "bob", "team": "red", "contest": "final"}, 422,
             "not both"),
            ("disqualify", "r", {"user": "bob", "contest": "nope"}, 404, "no contest")]:
        with refused(status, fragment):
            sanctions.impose(s, admin, kind, reason, **target)
    first = sanctions.impose(s, admin, "ignore", "copied", submission_id=submission.id)
    s.commit()
    with refused(409, f"sanction {first.id} does that already"):
        sanctions.impose(s, admin, "ignore", "again", submission_id=submission.id)
    with refused(422, "say why"):
        sanctions.lift(s, admin, first.id, "")
    sanctions.lift(s, admin, first.id, "mistake")
    s.commit()
    with refused(409, "lifted already"):
        sanctions.lift(s, admin, first.id, "again")
    with refused(404, "no sanction 999"):
        sanctions.lift(s, admin, 999, "r")
    again = sanctions.impose(s, admin, "ignore", "copied after all", submission_id=submission.id)
    s.commit()
    assert [x.id for x in sanctions.listing(s)] == [again.id]
    assert [x.id for x in sanctions.listing(s, everything=True)] == [again.id, first.id]


def test_a_frozen_boards_pending_counts_leave_out_what_counts_nowhere(s, config, world):
    now = utcnow()
    contest, _ = _contest_with_results(s, config, world, starts_at=now - timedelta(hours=1),
                                       ends_at=now + timedelta(hours=1))
    contest.freeze_at = utcnow()  # every result above is from before it
    s.commit()
    late, _ = submit(s, config, world["alice"], contest_slug="final")
    frozen = boards.results(s, contest, live=False).board
    assert {r["name"]: r.get("pending") for r in frozen["rows"]}["alice"] == {"vector_add": 1}
    sanctions.impose(s, world["admin"], "ignore", "late copy", submission_id=late.id)
    s.commit()
    frozen = boards.results(s, contest, live=False).board
    assert {r["name"]: r.get("pending") for r in frozen["rows"]}["alice"] == {}


def test_the_janitors_system_test_is_in_the_audit_log_with_no_organizer(s, config, world):
    contest, _ = _contest_with_results(s, config, world)
    contest.ends_at = utcnow()
    s.commit()
    system_tests.start_due_system_tests(s, config)
    s.commit()
    entry = s.query(AuditEntry).one()
    assert (entry.actor_id, entry.action, entry.target, entry.details) == (
        None, "contest.system_test", "final", {"reason": "it ended"})
