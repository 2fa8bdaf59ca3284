"""A worker's result outlives a database restart: it is stored once PostgreSQL is back (within
KJUDGE_STALE_AFTER_S), never turned into an SE by the outage."""

from __future__ import annotations

import threading

import pytest

from judge.judging.record import JudgeResult
from judge.service import db, store, worker
from judge.service.models import JudgingRow
from judge.settings import Settings
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS
from tests.server.stack import PrivatePostgres


@pytest.fixture
def private_postgres():
    pg = PrivatePostgres()
    yield pg
    db.engine(pg.url).dispose()
    pg.close()


def test_a_result_is_stored_once_a_restarting_database_is_back(private_postgres, tmp_path):
    pg = private_postgres
    config = Settings(data_dir=tmp_path, database_url=pg.url, problems_dir=PROBLEMS,
                      broker_url=f"sqla+sqlite:///{tmp_path}/broker.db", stale_after_s=30)
    db.upgrade(pg.url)
    with db.session(pg.url) as s:
        store.sync_problems(s, config)
        user, _ = store.create_user(s, "alice")
        _, work = store.submit(s, config, user, "vector_add", "cpp", "int x;")
    with db.session(pg.url) as s:
        token = store.claim(s, work.judging_id, "w:1:cpu")
    pg.stop("immediate")  # a crash, as the judging ends
    threading.Timer(3, pg.start).start()
    result = JudgeResult("vector_add", verdict=Verdict.AC, score=120.0)
    assert worker._finish(config, work.judging_id, token, result) is True
    with db.session(pg.url) as s:
        judging = s.get(JudgingRow, work.judging_id)
        assert (judging.state, judging.verdict, judging.score) == ("DONE", "AC", 120.0)
