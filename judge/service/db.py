"""Engine, sessions and migrations (`kjudge db upgrade`, also run at `kjudge serve` start)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"
# A database host that drops off the network (a cut cable, not a closed connection) must fail a
# query in seconds, not after the kernel's ~15 minutes of retransmissions: a worker's heartbeat
# and its result would hang that long. libpq's TCP settings, in seconds (the user timeout in ms).
POSTGRES_TCP = {"connect_timeout": 10, "keepalives": 1, "keepalives_idle": 10,
                "keepalives_interval": 5, "keepalives_count": 3, "tcp_user_timeout": 20000}


@cache
def engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        eng = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(eng, "connect")
        def _sqlite_pragmas(conn, _record) -> None:
            cursor = conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        return eng
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20,
                         connect_args=POSTGRES_TCP if url.startswith("postgresql") else {})


@cache
def _factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(engine(url), expire_on_commit=False)


@contextmanager
def session(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    s = _factory(url)()
    try:
        yield s
        s.commit()
    except BaseException:
        s.rollback()
        raise
    finally:
        s.close()


def alembic_config(url: str):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    from alembic import command

    engine(url)  # creates the SQLite directory
    command.upgrade(alembic_config(url), "head")


def unreachable(exc: BaseException) -> bool:
    """The database is not there (a lost connection, a server down or restarting), as opposed
    to a statement it refused."""
    return isinstance(exc, DBAPIError) and (
        exc.connection_invalidated or isinstance(exc, (OperationalError, InterfaceError)))
