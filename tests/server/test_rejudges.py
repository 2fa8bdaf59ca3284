"""Staged rejudges against real SQLite and PostgreSQL: judged aside (no result, no board moves),
read as a diff (submissions and board rows), then applied or cancelled as a whole."""

from __future__ import annotations

from judge.service import boards, claims, queueing, rejudges, submissions
from judge.service.models import JudgingRow
from tests.server.conftest import refused
from tests.server.test_service import _contest_with_results, finish_with


def totals(board: dict) -> dict[str, float]:
    return {row["name"]: row["total"] for row in board["rows"]}


def staged_rejudge(s, world, **filters):
    record, work = rejudges.rejudge(s, world["admin"], filters or {"problem": "vector_add"},
                                 "a stricter checker", staged=True)
    s.commit()
    return record, {s.get(JudgingRow, w.judging_id).submission_id: w.judging_id for w in work}


def test_a_staged_rejudge_counts_nowhere_until_applied_and_its_diff_says_what_moves(
        s, config, world):
    contest, made = _contest_with_results(s, config, world)
    assert totals(boards.results(s, contest).board) == {"bob": 200, "alice": 120}
    record, judging_of = staged_rejudge(s, world)
    assert len(judging_of) == 3  # alice80, alice120, bob_add
    # queued aside: every submission's state and result are what they were
    for submission in made.values():
        s.refresh(submission)
        assert submissions.latest_judging(submission).state == queueing.DONE
    with refused(409, "3 judging\\(s\\) still to end"):
        rejudges.apply(s, world["admin"], record)
    s.rollback()
    finish_with(s, judging_of[made["alice120"].id], "WA", 0)
    finish_with(s, judging_of[made["alice80"].id], "AC", 80)  # the same
    finish_with(s, judging_of[made["bob_add"].id], "AC", 150)
    # ended, and still counted nowhere
    assert totals(boards.results(s, contest).board) == {"bob": 200, "alice": 120}
    assert submissions.current_judging(made["alice120"]).score == 120
    shown = rejudges.diff(s, record)
    assert (shown["state"], shown["pending"], shown["unchanged"]) == ("staged", 0, 1)
    assert {c["submission"]: (c["before"]["verdict"], c["before"]["score"],
                              c["after"]["verdict"], c["after"]["score"])
            for c in shown["changed"]} == {made["alice120"].id: ("AC", 120, "WA", 0),
                                           made["bob_add"].id: ("AC", 100, "AC", 150)}
    moved = {b["contest"]: b["rows"] for b in shown["boards"]}
    assert set(moved) == {None, "final"}
    assert moved["final"] == [
        {"name": "bob", "team": False, "before": {"rank": 1, "total": 200},
         "after": {"rank": 1, "total": 250}},
        {"name": "alice", "team": False, "before": {"rank": 2, "total": 120},
         "after": {"rank": 2, "total": 80}}]
    rejudges.apply(s, world["admin"], record)
    s.commit()
    assert totals(boards.results(s, contest).board) == {"bob": 250, "alice": 80}
    assert record.state == "applied" and record.settled_by == world["admin"].id
    # the diff of an applied rejudge still says what it changed
    assert {c["submission"] for c in rejudges.diff(s, record)["changed"]} == {
        made["alice120"].id, made["bob_add"].id}
    with refused(409, "is applied: only a staged rejudge"):
        rejudges.cancel(s, world["admin"], record)


def test_a_cancelled_rejudge_never_counts_and_drops_what_it_had_not_judged(s, config, world):
    contest, made = _contest_with_results(s, config, world)
    record, judging_of = staged_rejudge(s, world, user="bob")
    finish_with(s, judging_of[made["bob_add"].id], "WA", 0)
    running = judging_of[made["bob_softmax"].id]
    token = claims.claim(s, running, "worker-1")
    s.commit()
    assert rejudges.cancel(s, world["admin"], record) == 1
    s.commit()
    assert not claims.finish(s, running, token, queueing.system_error(made["bob_softmax"], "x", "y"))
    assert totals(boards.results(s, contest).board) == {"bob": 200, "alice": 120}
    shown = rejudges.diff(s, record)
    assert (shown["state"], shown["dropped"], len(shown["changed"])) == ("cancelled", 1, 1)
    with refused(409, "is cancelled"):
        rejudges.apply(s, world["admin"], record)
    s.rollback()
    # settled: its submissions may be rejudged again
    rejudges.rejudge(s, world["admin"], {"user": "bob"}, "again")


def test_a_submission_in_a_staged_rejudge_is_in_no_other_until_it_is_settled(s, config, world):
    _, made = _contest_with_results(s, config, world)
    record, _ = staged_rejudge(s, world, user="alice")
    for staged in (True, False):
        with refused(409, f"is in staged rejudge {record.id}: apply or cancel"):
            rejudges.rejudge(s, world["admin"], {"problem": "vector_add"}, "other", staged)
        s.rollback()
    rejudges.rejudge(s, world["admin"], {"user": "bob"}, "bob only")  # not in it: fine


def test_the_diff_of_an_immediate_rejudge_compares_with_the_results_before_it(s, config, world):
    contest, made = _contest_with_results(s, config, world)
    record, work = rejudges.rejudge(s, world["admin"], {"submission_ids": [made["bob_add"].id]},
                                 "new baseline")
    s.commit()
    finish_with(s, work[0].judging_id, "AC", 90)
    assert totals(boards.results(s, contest).board)["bob"] == 190  # counted as it ended
    shown = rejudges.diff(s, record)
    assert shown["state"] == "counted"
    assert [(c["before"]["score"], c["after"]["score"]) for c in shown["changed"]] == [(100, 90)]
    with refused(409, "is counted"):
        rejudges.apply(s, world["admin"], record)
