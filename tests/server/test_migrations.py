"""Migrations keep data: a database filled under an older schema, upgraded to head and back."""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import command

from judge.judging.record import JudgeResult
from judge.service import db
from judge.service.models import JudgingRow
from judge.verdicts import Verdict

OLD_TESTS = [{"name": "n100", "sample": True, "verdict": "AC", "matched_ratio": 1.0,
              "time_ms": 0.5, "baseline_ms": 1.0, "speedup": 2.0}]
OLD_APPLIED = {"sandbox": "bwrap", "judge": "0.1.0", "phases": {"compile": 0.4, "timing": 2.0},
               "overhead_s": 2.1}


def _fill_at_first(url: str) -> None:
    """A database made by the first migration, with a row in every table it has."""
    command.upgrade(db.alembic_config(url), "0001")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO users (id, name, role, token_hash, created_at) VALUES "
                             "(1, 'alice', 'contestant', 'h', CURRENT_TIMESTAMP), "
                             "(2, 'root', 'admin', 'h2', CURRENT_TIMESTAMP)"))
        conn.execute(sa.text("INSERT INTO problems (id, slug, title, version, path, languages, "
                             "active, loaded_at) VALUES (1, 'vector_add', 'V', 'v1', '/p', "
                             "'[\"cpp\"]', true, CURRENT_TIMESTAMP)"))
        conn.execute(sa.text("INSERT INTO contests (id, slug, title, problems, languages, device) "
                             "VALUES (1, 'c1', 'C', '[\"vector_add\"]', NULL, 'cpu')"))
        conn.execute(sa.text("INSERT INTO rejudges (id, reason, filters, created_by, created_at) "
                             "VALUES (1, 'new baseline', '{}', 2, CURRENT_TIMESTAMP)"))
        conn.execute(sa.text("INSERT INTO submissions (id, user_id, problem_id, contest_id, "
                             "language, source, created_at) VALUES "
                             "(1, 1, 1, 1, 'cpp', 'src', CURRENT_TIMESTAMP)"))
        json_columns = ("tests", "flags", "applied")
        judgings = sa.table("judgings", *(
            sa.column(n, sa.JSON() if n in json_columns else None) for n in (
                "id", "submission_id", "queue", "state", "verdict", "score", "speedup",
                "time_ms", "peak_memory_mb", "tests", "compile_log", "message", "flags",
                "applied", "problem_version", "judge_version", "attempts", "valid",
                "queued_at")))
        common = {"submission_id": 1, "queue": "judge.cpu", "attempts": 1, "valid": True,
                  "queued_at": sa.func.now(), "compile_log": "", "message": ""}
        conn.execute(sa.insert(judgings).values(
            id=1, state="DONE", verdict="AC", score=200.0, speedup=2.0, time_ms=0.5,
            peak_memory_mb=1170.0, tests=OLD_TESTS, flags=["look"], applied=OLD_APPLIED,
            problem_version="v1", judge_version="0.1.0", **common))
        conn.execute(sa.insert(judgings).values(id=2, state="QUEUED", score=0.0, tests=[],
                                                flags=[], applied={}, **common))
    engine.dispose()


def snapshot(url: str) -> dict[str, list[dict]]:
    """Every row of every table (JSON read back as values: the dialects store it differently)."""
    engine = sa.create_engine(url)
    metadata = sa.MetaData()
    metadata.reflect(engine)
    tables = {}
    with engine.connect() as conn:
        for table in metadata.sorted_tables:
            if table.name == "alembic_version":
                continue
            rows = [{k: _loads(v) for k, v in row._mapping.items()}
                    for row in conn.execute(sa.select(table))]
            tables[table.name] = sorted(rows, key=repr)
    engine.dispose()
    return tables


def _loads(value):
    if isinstance(value, str) and value[:1] in ("[", "{"):
        return json.loads(value)
    return value


def test_first_migration_to_head_and_back_loses_nothing(database_url):
    _fill_at_first(database_url)
    before = snapshot(database_url)
    assert all(before[t] for t in ("users", "problems", "contests", "rejudges", "submissions",
                                   "judgings"))
    db.upgrade(database_url)
    with db.session(database_url) as s:
        assert s.get(JudgingRow, 1).result().tests[0].speedup == 2.0
    command.downgrade(db.alembic_config(database_url), "0001")
    assert snapshot(database_url) == before


def test_upgrade_to_head_and_back_keeps_every_judging(database_url):
    _fill_at_first(database_url)
    db.upgrade(database_url)
    with db.session(database_url) as s:
        done, queued = s.get(JudgingRow, 1), s.get(JudgingRow, 2)
        result = done.result()
        assert isinstance(result, JudgeResult) and result.verdict is Verdict.AC
        assert (done.verdict, done.score, done.speedup) == ("AC", 200.0, 2.0)
        assert result.tests[0].speedup == 2.0 and result.tests[0].verdict is Verdict.AC
        assert result.flags == ["look"] and result.problem_version == "v1"
        assert result.phases == {"compile": 0.4, "timing": 2.0}
        assert result.applied == {"sandbox": "bwrap", "judge": "0.1.0"}
        assert result.memory_mb == 1170.0 and "torch included" in result.memory_measure
        assert queued.record is None and queued.state == "QUEUED"
        assert s.execute(sa.text("SELECT source_kb FROM problems")).scalar() == 256

    command.downgrade(db.alembic_config(database_url), "0002")
    engine = sa.create_engine(database_url)
    with engine.connect() as conn:
        row = conn.execute(sa.text("SELECT verdict, score, peak_memory_mb, tests, flags, applied, "
                                   "problem_version, judge_version, valid FROM judgings "
                                   "WHERE id = 1")).one()
        other = conn.execute(sa.text("SELECT state, tests FROM judgings WHERE id = 2")).one()
    engine.dispose()
    def loads(value):
        return json.loads(value) if isinstance(value, str) else value

    assert (row.verdict, row.score, row.peak_memory_mb) == ("AC", 200.0, 1170.0)
    assert loads(row.tests)[0]["speedup"] == 2.0 and loads(row.flags) == ["look"]
    assert loads(row.applied)["phases"] == OLD_APPLIED["phases"]
    assert loads(row.applied)["overhead_s"] == 2.1
    assert (row.problem_version, row.judge_version, bool(row.valid)) == ("v1", "0.1.0", True)
    assert other.state == "QUEUED" and loads(other.tests) == []


def test_each_users_token_becomes_its_default_api_token(database_url):
    """0005 moves every user's one token to `api_tokens` ("default"): it keeps signing in."""
    _fill_at_first(database_url)
    db.upgrade(database_url)
    with db.session(database_url) as s:
        rows = s.execute(sa.text("SELECT u.name, t.name, t.token_hash FROM api_tokens t JOIN "
                                 "users u ON u.id = t.user_id ORDER BY u.name")).all()
        assert [tuple(r) for r in rows] == [("alice", "default", "h"), ("root", "default", "h2")]
        assert s.execute(sa.text("SELECT password_hash, team FROM users")).all() == [
            (None, None), (None, None)]
