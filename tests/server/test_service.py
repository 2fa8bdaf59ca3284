"""Service layer against real SQLite and PostgreSQL: users, submissions, claims, janitor,
rejudge history and the leaderboard."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from judge.judging.record import JudgeResult
from judge.service import (
    accounts,
    boards,
    catalog,
    claims,
    contests,
    counting,
    errors,
    queueing,
    rejudges,
    submissions,
    system_tests,
)
from judge.service.models import ApiToken, Contest, JudgingRow, utcnow
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS

AC_SOURCE = 'extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {}'


def record(verdict: str, score: float = 0.0) -> JudgeResult:
    return JudgeResult("vector_add", verdict=Verdict(verdict), score=score)


def finish_with(s, judging_id: int, verdict: str, score: float = 0.0) -> None:
    token = claims.claim(s, judging_id, "test-worker")
    assert token
    assert claims.finish(s, judging_id, token, record(verdict, score))
    s.commit()


def submit(s, config, user, problem="vector_add", language="cpp", source=AC_SOURCE, **kw):
    submission, work = submissions.submit(s, config, user, problem, language, source, **kw)
    s.commit()
    return submission, work


def test_migrations_create_every_table(s):
    from sqlalchemy import inspect

    tables = set(inspect(s.get_bind()).get_table_names())
    assert {"users", "problems", "contests", "submissions", "judgings", "rejudges"} <= tables


def test_problems_are_loaded_with_their_version(s, config):
    invalid = catalog.sync_problems(s, config)
    assert invalid == {}
    row = catalog.get_problem(s, "vector_add")
    assert row.version and "cpp" in row.languages
    with pytest.raises(errors.ServiceError) as info:
        catalog.get_problem(s, "nope")
    assert info.value.status == 404


def test_tokens_are_stored_hashed_and_authenticate(s, world):
    token = world["alice_token"]
    assert accounts.user_by_token(s, token).name == "alice"
    stored = s.scalars(select(ApiToken.token_hash).where(ApiToken.user_id == world["alice"].id))
    assert token not in stored.all()
    assert accounts.user_by_token(s, "kj_wrong") is None
    with pytest.raises(errors.ServiceError, match="exists"):
        accounts.create_user(s, "alice")


@pytest.mark.parametrize("kwargs,status", [
    ({"problem": "nope"}, 404),
    ({"language": "fortran"}, 422),
    ({"language": "maca"}, 422),
    ({"source": "   "}, 422),
    ({"source": "x" * 300_000}, 413),
])
def test_bad_submissions_are_refused_with_a_status(s, config, world, kwargs, status):
    with pytest.raises(errors.ServiceError) as info:
        submit(s, config, world["alice"], **kwargs)
    assert info.value.status == status and info.value.message


def test_a_source_over_the_problems_own_limit_is_refused_before_it_is_queued(s, config, world,
                                                                              tmp_path):
    """Under the server's 256 KiB but over the problem's `source_kb`: the submitter's mistake,
    told at once (413), never a queued judging that ends as the judge's SE."""
    root = tmp_path / "problems"
    shutil.copytree(PROBLEMS / "vector_add", root / "vector_add")
    spec = root / "vector_add" / "problem.yaml"
    spec.write_text(spec.read_text().replace("output_kb: 64}", "output_kb: 64, source_kb: 4}"))
    small = replace(config, problems_dir=root)
    catalog.sync_problems(s, small)
    with pytest.raises(errors.ServiceError) as info:
        submit(s, small, world["alice"], source=AC_SOURCE + "//" + "x" * 5000)
    assert info.value.status == 413 and "limit for vector_add is 4 KiB" in info.value.message
    assert s.scalar(select(func.count(JudgingRow.id))) == 0
    submit(s, small, world["alice"])  # within the limit


def test_a_language_the_contest_device_cannot_run_is_refused(s, config, world):
    """A CUDA source in a contest judged on the CPU would end as SE "route it to a worker that
    can run it" on every worker: refused at admission instead."""
    now = utcnow()
    s.add(Contest(slug="cpu-only", title="CPU", problems=["vector_add"], device="cpu",
                  starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=1)))
    s.commit()
    cuda = (PROBLEMS / "vector_add" / "templates" / "cuda.cu").read_text()
    with pytest.raises(errors.ServiceError) as info:
        submit(s, config, world["alice"], language="cuda", source=cuda, contest_slug="cpu-only")
    assert info.value.status == 422 and "cpu device" in info.value.message


def test_rate_limit_per_user(s, config, world):
    limited = replace(config, submissions_per_minute=2)
    submit(s, limited, world["alice"])
    submit(s, limited, world["alice"])
    with pytest.raises(errors.ServiceError) as info:
        submit(s, limited, world["alice"])
    assert info.value.status == 429
    submit(s, limited, world["bob"])  # others are not affected


def test_contest_window_and_problem_set(s, config, world):
    now = utcnow()
    s.add(Contest(slug="past", title="Past", problems=["vector_add"],
                  starts_at=now - timedelta(days=2), ends_at=now - timedelta(days=1)))
    s.add(Contest(slug="live", title="Live", problems=["softmax"], device="cpu",
                  starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=1)))
    s.commit()
    with pytest.raises(errors.ServiceError) as info:
        submit(s, config, world["alice"], contest_slug="past")
    assert info.value.status == 403 and "ended" in info.value.message
    with pytest.raises(errors.ServiceError) as info:
        submit(s, config, world["alice"], contest_slug="live")
    assert info.value.status == 404
    submission, work = submit(s, config, world["alice"], problem="softmax", contest_slug="live")
    assert submission.contest_id is not None and work.queue == f"{config.queue_prefix}.cpu"


def test_a_judging_is_claimed_and_finished_exactly_once(s, config, world):
    _, work = submit(s, config, world["alice"])
    first = claims.claim(s, work.judging_id, "w1")
    assert first and claims.claim(s, work.judging_id, "w2") is None
    assert claims.holds(s, work.judging_id, first, state="RUNNING")
    assert claims.finish(s, work.judging_id, first, record("AC", 50.0))
    assert not claims.finish(s, work.judging_id, first, record("WA"))  # second finish ignored
    s.commit()
    judging = s.get(JudgingRow, work.judging_id)
    assert (judging.state, judging.verdict, judging.attempts) == ("DONE", "AC", 1)


def test_dead_workers_judgings_are_requeued_then_given_up_as_SE(s, config, world):
    _, work = submit(s, config, world["alice"])
    quick = replace(config, stale_after_s=0, max_attempts=2)
    old = claims.claim(s, work.judging_id, "w1")
    s.execute(JudgingRow.__table__.update().values(heartbeat_at=utcnow() - timedelta(minutes=1)))
    requeue, failed = queueing.stale_claims(s, quick)
    s.commit()
    assert [w.judging_id for w in requeue] == [work.judging_id] and not failed
    assert not claims.finish(s, work.judging_id, old, record("AC"))  # the dead claim is void
    claims.claim(s, work.judging_id, "w2")
    s.execute(JudgingRow.__table__.update().values(heartbeat_at=utcnow() - timedelta(minutes=1)))
    requeue, failed = queueing.stale_claims(s, quick)
    s.commit()
    judging = s.get(JudgingRow, work.judging_id)
    assert failed == [work.judging_id] and judging.verdict == "SE"
    assert judging.result().flags and "losing its worker" in judging.result().message


def test_unpublished_and_lost_messages_are_found(s, config, world):
    _, work = submit(s, config, world["alice"])
    # just stored: its API process is publishing it (broker.Publisher), the janitor leaves it
    assert queueing.unpublished(s, config, {}) == []
    s.execute(JudgingRow.__table__.update().values(queued_at=utcnow() - timedelta(seconds=5)))
    s.commit()
    assert [w.judging_id for w in queueing.unpublished(s, config, {})] == [work.judging_id]
    queueing.mark_enqueued(s, [work.judging_id])
    s.execute(JudgingRow.__table__.update().values(enqueued_at=utcnow() - timedelta(minutes=1)))
    s.commit()
    assert queueing.unpublished(s, config, {work.queue: 1}) == []  # the broker holds it
    lost = queueing.unpublished(s, config, {work.queue: 0})  # e.g. Redis restarted empty
    assert [w.judging_id for w in lost] == [work.judging_id]


def test_rejudge_keeps_history_and_the_current_result_moves(s, config, world):
    submission, work = submit(s, config, world["alice"])
    finish_with(s, work.judging_id, "WA")
    assert submissions.current_judging(submission).verdict == "WA"
    record, rework = rejudges.rejudge(s, world["admin"], {"problem": "vector_add"}, "fixed data")
    s.commit()
    assert len(rework) == 1 and rework[0].queue.endswith(".rejudge")
    s.refresh(submission)
    assert submissions.current_judging(submission).verdict == "WA"  # until the rejudge finishes
    finish_with(s, rework[0].judging_id, "AC", 120.0)
    s.refresh(submission)
    assert submissions.current_judging(submission).verdict == "AC"
    assert [j.verdict for j in submission.judgings] == ["WA", "AC"]
    assert rejudges.rejudge_progress(s, record.id) == {"total": 1, "done": 1, "pending": 0}


def test_rejudge_filters(s, config, world):
    a, wa = submit(s, config, world["alice"])
    b, wb = submit(s, config, world["bob"])
    finish_with(s, wa.judging_id, "WA")
    finish_with(s, wb.judging_id, "AC", 100)
    _, by_user = rejudges.rejudge(s, world["admin"], {"user": "bob"}, "r")
    _, by_verdict = rejudges.rejudge(s, world["admin"], {"verdict": "WA"}, "r")
    _, by_id = rejudges.rejudge(s, world["admin"], {"submission_ids": [a.id, b.id]}, "r")
    _, since = rejudges.rejudge(s, world["admin"],
                               {"since": utcnow() + timedelta(hours=1)}, "r")
    ids = lambda work: sorted(s.get(JudgingRow, w.judging_id).submission_id for w in work)  # noqa: E731
    assert ids(by_user) == [b.id] and ids(by_verdict) == [a.id]
    assert ids(by_id) == [a.id, b.id] and since == []
    with pytest.raises(errors.ServiceError):
        rejudges.rejudge(s, world["admin"], {}, "everything?")
    with pytest.raises(errors.ServiceError):
        rejudges.rejudge(s, world["admin"], {"user": "bob"}, " ")


def test_leaderboard_gate_best_across_languages_and_ties(s, config, world):
    alice, bob = world["alice"], world["bob"]
    _, w1 = submit(s, config, alice)
    finish_with(s, w1.judging_id, "AC", 80)
    _, w2 = submit(s, config, alice, language="torch", source="def run_kernel(a, b, c, n): pass")
    finish_with(s, w2.judging_id, "AC", 120)  # best across languages counts
    _, w3 = submit(s, config, alice)
    finish_with(s, w3.judging_id, "WA", 999)  # correctness gate: never ranked
    _, w4 = submit(s, config, bob, problem="softmax")
    finish_with(s, w4.judging_id, "AC", 120)  # same total, reached later
    board = boards.results(s).board
    rows = {r["name"]: r for r in board["rows"]}
    assert rows["alice"]["total"] == 120 and rows["alice"]["problems"] == {"vector_add": 120}
    assert rows["alice"]["rank"] == 1 and rows["bob"]["rank"] == 2
    assert "matmul" in board["problems"]


def test_a_system_error_never_replaces_a_real_verdict(s, config, world):
    submission, work = submit(s, config, world["alice"])
    finish_with(s, work.judging_id, "AC", 100)
    _, rework = rejudges.rejudge(s, world["admin"], {"submission_ids": [submission.id]}, "r")
    s.commit()
    finish_with(s, rework[0].judging_id, "SE")
    s.refresh(submission)
    assert submissions.current_judging(submission).verdict == "AC"
    assert boards.results(s).board["rows"][0]["total"] == 100
    only_se, w2 = submit(s, config, world["bob"])
    finish_with(s, w2.judging_id, "SE")
    assert submissions.current_judging(only_se).verdict == "SE"


def test_live_work_is_seen_from_the_rejudge_queue(s, config, world):
    _, work = submit(s, config, world["alice"])
    assert queueing.live_work_waiting(s, work.queue + ".rejudge")
    finish_with(s, work.judging_id, "AC", 1)
    assert not queueing.live_work_waiting(s, work.queue + ".rejudge")


def test_the_leaderboards_query_picks_the_current_judging_as_current_judging_does(s, config,
                                                                                  world):
    """`current_accepted` (SQL, for the leaderboard and the problem list) and `current_judging`
    (Python, for one record) state one rule: over random histories — rejudges, system errors,
    invalidated and unfinished judgings — they agree on which submissions count, and at what
    score."""
    import random

    from judge.service.models import Submission

    rng = random.Random(7)
    config = replace(config, submissions_per_minute=1000)
    for _ in range(40):
        submission, work = submit(s, config, rng.choice([world["alice"], world["bob"]]))
        ids = [work.judging_id]
        for _ in range(rng.randrange(3)):
            ids.append(JudgingRow(submission_id=submission.id, queue=work.queue))
            s.add(ids[-1])
            s.flush()
            ids[-1] = ids[-1].id
        for judging_id in ids:
            judging = s.get(JudgingRow, judging_id)
            judging.state = rng.choice(["DONE", "DONE", "DONE", "RUNNING"])
            judging.verdict = rng.choice(["AC", "AC", "WA", "SE"])
            judging.score = rng.uniform(1, 100)
        s.commit()
    expected = set()
    for submission in s.scalars(submissions.with_results(select(Submission))).unique():
        current = submissions.current_judging(submission)
        if current is not None and current.verdict == "AC":
            expected.add((submission.user.name, round(current.score, 9)))
    got = {(name, round(score, 9)) for _uid, name, _team, _slug, score, _at, _id in
           counting.current_accepted(s)}
    assert got == expected and expected


def test_the_cached_results_follow_every_judging_that_ends(s, config, world):
    """The leaderboard and problem list are computed once per change of the results: every
    judging's end moves the results counter in its own transaction, so no read after it sees
    the board from before; a database that lost its counter row still moves on."""
    from judge.service.models import Counter

    assert boards.results(s).board["rows"] == []
    _, work = submit(s, config, world["alice"])
    finish_with(s, work.judging_id, "AC", 100)
    assert [r["name"] for r in boards.results(s).board["rows"]] == ["alice"]
    assert boards.problem_stats(s, world["alice"])["vector_add"] == {"solvers": 1,
                                                                      "best_score": 100}
    s.query(Counter).delete()
    s.commit()
    _, work = submit(s, config, world["bob"])
    finish_with(s, work.judging_id, "AC", 200)
    assert [r["name"] for r in boards.results(s).board["rows"]] == ["bob", "alice"]
    cached = boards.results(s)
    assert boards.results(s) is cached  # nothing changed: nothing recomputed


def test_the_publisher_sends_what_it_holds_and_flushes_on_close(s, config, world):
    """What an API process hands its publishing thread reaches the broker in a batch and is
    marked enqueued; close() sends what is still held before the thread stops."""
    from judge.service import broker

    works = [submit(s, config, world["alice"])[1] for _ in range(3)]
    publisher = broker.Publisher(config)
    publisher.send(works)
    publisher.close(timeout=60)
    s.expire_all()
    assert all(s.get(JudgingRow, w.judging_id).enqueued_at is not None for w in works)
    assert broker.broker_counts(config, {works[0].queue}) == {works[0].queue: 3}
    assert queueing.unpublished(s, config, {works[0].queue: 3}) == []


def test_a_contests_language_list_narrows_the_problems_and_an_empty_one_does_not(s, config,
                                                                                  world):
    now = utcnow()
    window = {"starts_at": now - timedelta(hours=1), "ends_at": now + timedelta(hours=1)}
    s.add(Contest(slug="python-only", title="P", problems=["vector_add"], languages=["triton"],
                  **window))
    s.add(Contest(slug="open", title="O", problems=["vector_add"], languages=[], **window))
    s.commit()
    with pytest.raises(errors.ServiceError, match="allowed: triton"):
        submit(s, config, world["alice"], contest_slug="python-only")
    submit(s, config, world["alice"], contest_slug="open")  # cpp, as the problem allows


def _contest_with_results(s, config, world, **fields):
    """A running contest: alice 80 then 120 on vector_add; bob 100 on vector_add and on softmax.
    Returns the contest and the submissions by name."""
    s.add(Contest(slug="final", title="Final", problems=["vector_add", "softmax"], **fields))
    s.commit()
    made = {}
    for name, user, problem, score in (("alice80", "alice", "vector_add", 80),
                                       ("alice120", "alice", "vector_add", 120),
                                       ("bob_add", "bob", "vector_add", 100),
                                       ("bob_softmax", "bob", "softmax", 100)):
        submission, work = submit(s, config, world[user], problem=problem, contest_slug="final")
        finish_with(s, work.judging_id, "AC", score)
        made[name] = submission
    return contests.get_contest(s, "final"), made


def test_a_system_test_judges_each_rows_counted_submissions_again_and_the_board_counts_those(
        s, config, world):
    contest, made = _contest_with_results(s, config, world)
    record, work = system_tests.system_test(s, config, contest, world["admin"])
    s.commit()
    judgings = [s.get(JudgingRow, w.judging_id) for w in work]
    # each row's counted submission per problem, the leader's first, problem by problem
    assert [j.submission_id for j in judgings] == [made[n].id for n in
                                                   ("bob_add", "bob_softmax", "alice120")]
    assert {w.queue for w in work} == {f"{config.queue_prefix}.cpu.systest"}
    assert all(w.rejudge and j.rejudge_id == record.id for w, j in zip(work, judgings))
    board = boards.results(s, contest).board  # until they end, the earlier judgings count
    assert {r["name"]: r["total"] for r in board["rows"]} == {"bob": 200, "alice": 120}
    # alice's 120 fails on the fresh seeds: her 80, not judged again, does not step in
    for judging, (verdict, score) in zip(judgings, (("AC", 90), ("AC", 100), ("WA", 0))):
        finish_with(s, judging.id, verdict, score)
    board = boards.results(s, contest).board
    assert {r["name"]: r["total"] for r in board["rows"]} == {"bob": 190}
    report = system_tests.system_test_report(s, contest)
    assert report["done"] == report["total"] == 3
    rows = {r["name"]: r for r in report["rows"]}
    assert rows["bob"]["before"] == {"rank": 1, "total": 200}
    assert rows["bob"]["after"] == {"rank": 1, "total": 190}
    assert rows["bob"]["problems"] == {"vector_add": [100, 90], "softmax": [100, 100]}
    assert rows["alice"]["after"] == {"rank": None, "total": 0.0}
    assert rows["alice"]["problems"]["vector_add"] == [120, None]
    assert boards.results(s).board != board  # the board outside the contest is not narrowed
    assert {r["name"]: r["total"] for r in boards.results(s).board["rows"]}["alice"] == 80


def test_a_system_test_leaves_the_frozen_board_as_it_stood_until_the_thaw(s, config, world):
    """Issue 44's case: alice 9.13 before the freeze and 76.9 after it, bob only after it,
    carol 30 before it. The system test judges again what the live board counts (alice's
    76.9, bob's, carol's 30); until the thaw a visitor's board is the frozen one whatever it
    judged (alice 9.13, carol 30, bob pending; nobody's row dropped, no rejudged score shown:
    nothing about who improved after the freeze), and after the thaw the final board counts
    the system test's judgings."""
    carol, _ = accounts.create_user(s, "carol")
    s.add(Contest(slug="cup", title="Cup", problems=["vector_add"],
                  starts_at=utcnow() - timedelta(hours=1)))
    s.commit()
    contest = contests.get_contest(s, "cup")

    def ac(user, score):
        _, work = submit(s, config, user, contest_slug="cup")
        finish_with(s, work.judging_id, "AC", score)

    ac(world["alice"], 9.13)
    ac(carol, 30.0)
    contest.freeze_at = utcnow()
    s.commit()
    ac(world["alice"], 76.9)
    ac(world["bob"], 50.0)
    contest.ends_at = utcnow()
    s.commit()

    def visitors_board():
        return {r["name"]: (r["total"], r["rank"], r["pending"])
                for r in boards.results(s, contest, live=False).board["rows"]}

    frozen = visitors_board()
    assert frozen == {"carol": (30.0, 1, {}), "alice": (9.13, 2, {"vector_add": 1}),
                      "bob": (0.0, None, {"vector_add": 1})}
    _, work = system_tests.system_test(s, config, contest, world["admin"])
    s.commit()
    assert visitors_board() == frozen  # started
    for w, score in zip(work, (70.0, 45.0, 25.0)):  # alice 76.9, bob 50, carol 30: again
        finish_with(s, w.judging_id, "AC", score)
    assert visitors_board() == frozen  # ended, still frozen
    contests.unfreeze(contest)
    s.commit()
    final = {r["name"]: (r["total"], r["rank"])
             for r in boards.results(s, contest, live=False).board["rows"]}
    assert final == {"alice": (70.0, 1), "bob": (45.0, 2), "carol": (25.0, 3)}


def test_the_janitor_starts_a_system_test_once_when_a_contest_ends(s, config, world):
    contest, _ = _contest_with_results(s, config, world)
    assert system_tests.start_due_system_tests(s, config) == []  # no end set: never due
    contest.ends_at = utcnow()  # after its submissions
    s.add(Contest(slug="quiet", title="Quiet", problems=["vector_add"], system_test=False,
                  ends_at=utcnow()))
    s.commit()
    started = system_tests.start_due_system_tests(s, config)
    s.commit()
    assert len(started) == 3 and boards.latest_system_test(s, contest).reason == "final ended"
    assert boards.latest_system_test(s, contests.get_contest(s, "quiet")) is None
    assert system_tests.start_due_system_tests(s, config) == []  # once
    with pytest.raises(errors.ServiceError) as info:
        system_tests.system_test_report(s, contests.get_contest(s, "quiet"))
    assert info.value.status == 404 and "system-test" in info.value.message


def test_system_test_judgings_defer_to_live_submissions_and_are_drained_by_one_worker(config):
    from judge.commands.server import queues_for

    assert queueing.live_queue("judge.cpu.systest") == queueing.live_queue("judge.cpu.rejudge") == (
        "judge.cpu")
    plain = queues_for(config, "judge.cpu", None)
    assert plain == ["judge.cpu", "judge.cpu.rejudge"]
    assert queues_for(config, "judge.cpu", None, system_tests=True) == [*plain,
                                                                       "judge.cpu.systest"]


def test_a_queued_submission_knows_its_place_and_about_how_long(s, config, world):
    first, work = submit(s, config, world["alice"])
    second, _ = submit(s, config, world["bob"])
    third, _ = submit(s, config, world["alice"])
    place = queueing.queue_place(s, submissions.latest_judging(third))
    assert place == {"queue": work.queue, "position": 3, "running": 0, "estimate_s": None}
    # one judged in 4 s by one worker: the third waits for two rounds, then its own
    judging = s.get(JudgingRow, work.judging_id)
    finish_with(s, work.judging_id, "AC", 100.0)
    judging.started_at = judging.finished_at - timedelta(seconds=4)
    s.commit()
    place = queueing.queue_place(s, submissions.latest_judging(third))
    assert place["position"] == 2 and place["estimate_s"] == 8.0
    # a second worker halves the rounds; a judged one has no place
    running = submissions.latest_judging(second)
    assert claims.claim(s, running.id, "worker-b")
    s.commit()
    assert queueing.queue_place(s, submissions.latest_judging(third)) == {
        "queue": work.queue, "position": 1, "running": 1, "estimate_s": 4.0}
    assert queueing.queue_place(s, submissions.latest_judging(first)) is None


def test_a_queue_row_made_by_another_process_first_is_read_not_fatal(tmp_path):
    """The embedded broker's queue row, inserted by the API and a starting worker at once: the
    loser of kombu's insert (its lock is per process) reads the winner's row."""
    import sqlalchemy
    from kombu import Connection

    from judge.service.broker import race_tolerant

    url = f"sqla+sqlite:///{tmp_path / 'broker.db'}"
    with Connection(url) as mine, Connection(url) as theirs:
        channel = mine.default_channel
        theirs.default_channel._get_or_create("judge.cpu")  # the other process wins the insert
        with pytest.raises(sqlalchemy.exc.IntegrityError):  # what kombu did when it lost
            _raced(channel, "judge.cpu")
        channel.session.rollback()
        assert race_tolerant(_raced)(channel, "judge.cpu").name == "judge.cpu"


def _raced(channel, queue: str):
    """kombu's insert as it runs when its own look missed the row (another process's insert
    came between): add and commit, no second look."""
    channel.session.add(channel.queue_cls(queue))
    channel.session.commit()
