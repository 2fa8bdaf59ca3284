"""A database that restarts, against a PostgreSQL server of the test's own: a worker's result is
stored once it is back (within KJUDGE_STALE_AFTER_S), never turned into an SE by the outage;
the API answers 503 with Retry-After meanwhile, not a bare 500."""

from __future__ import annotations

import threading

import pytest

from judge.judging.record import JudgeResult
from judge.service import accounts, catalog, claims, db, submissions, worker
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
        catalog.sync_problems(s, config)
        user, _ = accounts.create_user(s, "alice")
        _, work = submissions.submit(s, config, user, "vector_add", "cpp", "int x;")
    with db.session(pg.url) as s:
        token = claims.claim(s, work.judging_id, "w:1:cpu")
    pg.stop("immediate")  # a crash, as the judging ends
    threading.Timer(3, pg.start).start()
    result = JudgeResult("vector_add", verdict=Verdict.AC, score=120.0)
    assert worker._finish(config, work.judging_id, token, result) is True
    with db.session(pg.url) as s:
        judging = s.get(JudgingRow, work.judging_id)
        assert (judging.state, judging.verdict, judging.score) == ("DONE", "AC", 120.0)


def test_the_api_answers_503_with_a_retry_while_the_database_is_down(private_postgres, tmp_path):
    from fastapi.testclient import TestClient

    from judge.service.api import create_app

    pg = private_postgres
    config = Settings(data_dir=tmp_path, database_url=pg.url, problems_dir=PROBLEMS,
                      broker_url=f"sqla+sqlite:///{tmp_path}/broker.db")
    db.upgrade(pg.url)
    with db.session(pg.url) as s:
        _, token = accounts.create_user(s, "alice")
    api = TestClient(create_app(config, janitor=False), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {token}"}
    assert api.get("/api/me", headers=headers).status_code == 200
    pg.stop("immediate")
    down = api.get("/api/me", headers=headers)
    assert down.status_code == 503 and down.headers["Retry-After"] == "2"
    assert "database" in down.json()["error"]
    pg.start()
    assert api.get("/api/me", headers=headers).status_code == 200
