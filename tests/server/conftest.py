"""Fixtures for the service tests: real SQLite and PostgreSQL databases, a real broker."""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from judge.service import db
from judge.settings import Settings
from tests.conftest import PROBLEMS

POSTGRES_ADMIN = os.environ.get("KJUDGE_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _postgres_database():
    """Create a throw-away PostgreSQL database; yield its URL; drop it."""
    import sqlalchemy as sa

    name = f"kjudge_test_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(POSTGRES_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("CI"):
            raise
        pytest.skip(f"PostgreSQL is not reachable here: {exc}")
    url = POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    yield url
    db.engine(url).dispose()
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/kjudge.db"
    else:
        yield from _postgres_database()


@pytest.fixture
def config(database_url, tmp_path) -> Settings:
    base = Settings(data_dir=tmp_path, database_url=database_url,
                    broker_url=f"sqla+sqlite:///{tmp_path}/broker.db", problems_dir=PROBLEMS,
                    queue_prefix=f"t{uuid.uuid4().hex[:6]}")
    db.upgrade(base.database_url)
    return replace(base)


PASSWORD = "correct horse battery"  # alice's (the others sign in with tokens only)


@pytest.fixture
def api(config):
    """The app in-process (FastAPI's TestClient) with an organizer (root) and two contestants
    (alice, with a password, and bob); `api.tokens[who]` are their API tokens."""
    from fastapi.testclient import TestClient

    from judge.service import accounts, catalog
    from judge.service.api import create_app

    with db.session(config.database_url) as s:
        catalog.sync_problems(s, config)
        _, admin = accounts.create_user(s, "root", admin=True)
        _, alice = accounts.create_user(s, "alice", password=PASSWORD)
        _, bob = accounts.create_user(s, "bob")
    client = TestClient(create_app(config, janitor=False))
    client.tokens = {"admin": admin, "alice": alice, "bob": bob}
    client.config = config
    return client


@pytest.fixture
def s(config):
    with db.session(config.database_url) as session:
        yield session


@pytest.fixture
def world(s, config):
    """Problems loaded, an organizer (root) and two contestants (alice, bob) in the store."""
    from judge.service import accounts, catalog

    catalog.sync_problems(s, config)
    admin, _ = accounts.create_user(s, "root", admin=True)
    alice, alice_token = accounts.create_user(s, "alice")
    bob, _ = accounts.create_user(s, "bob")
    s.commit()
    return {"admin": admin, "alice": alice, "bob": bob, "alice_token": alice_token}


@contextmanager
def refused(status: int, fragment: str):
    """The block raises the service's refusal with this status and text."""
    from judge.service.errors import ServiceError

    with pytest.raises(ServiceError, match=fragment) as info:
        yield info
    assert info.value.status == status, info.value.message


def problems_dir() -> Path:
    return PROBLEMS
