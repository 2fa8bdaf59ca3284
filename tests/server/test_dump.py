"""A dump of a judge's database loads into an empty one with the same leaderboard, judgings,
rejudge history and tokens; bad dumps and non-empty targets are refused with a reason."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from judge.service import accounts, audit, boards, catalog, db, dump, rejudges, sanctions
from judge.service.models import Base, Contest, ProfileReport
from tests.server.conftest import _postgres_database
from tests.server.test_service import finish_with, submit


@pytest.fixture
def target_url(database_url, tmp_path):
    """A second, empty database of the same dialect, migrated to head."""
    if database_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path}/target.db"
        db.upgrade(url)
        yield url
    else:
        made = _postgres_database()
        url = next(made)
        db.upgrade(url)
        yield url
        next(made, None)


def _contest_with_history(s, config) -> str:
    catalog.sync_problems(s, config)
    admin, _ = accounts.create_user(s, "root", admin=True)
    alice, alice_token = accounts.create_user(s, "alice")
    bob, _ = accounts.create_user(s, "bob")
    s.add(Contest(slug="c1", title="C", problems=["vector_add", "softmax"], device="cpu"))
    s.commit()
    _, w1 = submit(s, config, alice)
    finish_with(s, w1.judging_id, "AC", 80)
    _, w2 = submit(s, config, bob, problem="softmax")
    finish_with(s, w2.judging_id, "AC", 80)  # the same total, reached later
    wrong, w3 = submit(s, config, bob)
    finish_with(s, w3.judging_id, "WA", 999)
    sanctions.impose(s, admin, "ignore", "a test of the judge", submission_id=wrong.id)
    audit.record(s, admin, "sanction.ignore", f"submission {wrong.id}")
    s.add(ProfileReport(judging_id=w3.judging_id, filename="profile.ncu-rep",
                        data=bytes(range(256))))  # bytes travel as base64
    s.commit()
    _, rejudged = rejudges.rejudge(s, admin, {"problem": "vector_add", "user": "alice"},
                                  "new baseline")
    s.commit()
    finish_with(s, rejudged[0].judging_id, "AC", 95)  # alice's, rejudged higher
    submit(s, config, alice, problem="softmax")  # still queued when the dump is made
    return alice_token


def _rows(url: str) -> dict[str, int]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        counts = {t.name: conn.scalar(sa.select(sa.func.count()).select_from(t))
                  for t in Base.metadata.sorted_tables}
    engine.dispose()
    return counts


def test_a_dump_loads_into_an_empty_database_with_the_same_leaderboard(s, config, target_url):
    token = _contest_with_history(s, config)
    board = boards.results(s).board
    made = json.loads(json.dumps(dump.export_dump(s)))  # as it travels: a JSON file
    with db.session(target_url) as t:
        loaded = dump.import_dump(t, made)
    assert loaded["judgings"] == 5 and loaded["submissions"] == 4
    assert _rows(target_url) == _rows(config.database_url)
    with db.session(target_url) as t:
        assert boards.results(t).board == board
        assert [r["name"] for r in board["rows"]][:2] == ["alice", "bob"]
        assert accounts.user_by_token(t, token).name == "alice"  # tokens keep working
        assert rejudges.rejudge_progress(t, 1)["total"] == 1
        assert [x.reason for x in sanctions.listing(t)] == ["a test of the judge"]
        assert [e.action for e in audit.entries(t)] == ["sanction.ignore"]
        assert t.scalars(sa.select(ProfileReport.data)).one() == bytes(range(256))
        # new rows get new ids (PostgreSQL's sequences were moved past the imported ones)
        user, _ = accounts.create_user(t, "carol")
        t.flush()
        assert user.id == 4


def test_a_dump_is_refused_by_a_database_that_is_not_empty(s, config):
    _contest_with_history(s, config)
    made = dump.export_dump(s)
    with pytest.raises(dump.DumpError, match="not empty .*users"):
        dump.import_dump(s, made)


def test_bad_dumps_are_refused_with_what_to_do(s, target_url):
    made = dump.export_dump(s)
    with db.session(target_url) as t:
        with pytest.raises(dump.DumpError, match="not a kjudge-dump"):
            dump.import_dump(t, {"rows": []})
        with pytest.raises(dump.DumpError, match="upgrade the source database"):
            dump.import_dump(t, {**made, "revision": "0001"})
        with pytest.raises(dump.DumpError, match="tables this schema does not"):
            dump.import_dump(t, {**made, "tables": {**made["tables"], "teams": []}})
