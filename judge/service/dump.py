"""A whole database as one JSON document, and back into an empty database: moving a contest to
new hosts, or keeping one after it ended (`kjudge export --format dump`, `kjudge db export`,
`kjudge db import`).

Every table of the schema (`models.Base.metadata`: no list here), every column, times in UTC
ISO form, bytes (profile reports) in base64. A dump names the schema revision it was made at;
it loads only into a database at the same revision (upgrade the old one first), so that no
column is guessed.
"""

from __future__ import annotations

import base64
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import DateTime, LargeBinary, Table, delete, func, insert, select, text
from sqlalchemy.orm import Session

from judge.service.models import Base, Counter

FORMAT = "kjudge-dump"
VERSION = 1
REPLACED = {Counter.__tablename__}  # a new database's own rows here give way to the dump's


class DumpError(Exception):
    pass


def revision(s: Session) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(s.connection()).get_current_revision()


def export_dump(s: Session) -> dict[str, Any]:
    tables = {}
    for table in Base.metadata.sorted_tables:
        rows = s.execute(select(table).order_by(*table.primary_key.columns)).mappings()
        tables[table.name] = [{name: _plain(value) for name, value in row.items()}
                              for row in rows]
    return {"format": FORMAT, "version": VERSION, "revision": revision(s), "tables": tables}


def import_dump(s: Session, dump: dict[str, Any]) -> dict[str, int]:
    """Load a dump into this (empty, migrated) database; rows loaded per table."""
    if not isinstance(dump, dict) or dump.get("format") != FORMAT:
        raise DumpError(f"not a {FORMAT} document (made by `kjudge export --format dump` or "
                        "`kjudge db export`)")
    if dump.get("version") != VERSION:
        raise DumpError(f"dump format version {dump.get('version')!r}; this judge reads {VERSION}")
    here = revision(s)
    if dump.get("revision") != here:
        raise DumpError(f"the dump is of schema revision {dump.get('revision')}, this database "
                        f"is at {here}: upgrade the source database (kjudge db upgrade) and "
                        "export it again")
    tables = {t.name: t for t in Base.metadata.sorted_tables}
    unknown = set(dump["tables"]) - set(tables)
    if unknown:
        raise DumpError(f"the dump has tables this schema does not: {sorted(unknown)}")
    filled = [name for name, table in tables.items() if name not in REPLACED
              and s.scalar(select(func.count()).select_from(table))]
    if filled:
        raise DumpError(f"the database is not empty (rows in {', '.join(filled)}): import "
                        "into a new database, before `kjudge serve` first starts on it")
    loaded = {}
    for name, table in tables.items():  # parents before children (foreign keys)
        rows = [_typed(table, row) for row in dump["tables"].get(name, [])]
        if name in REPLACED:
            s.execute(delete(table))
        if rows:
            s.execute(insert(table), rows)
        loaded[name] = len(rows)
        _move_sequence(s, table)
    return loaded


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):  # a profile's report file
        return base64.b64encode(value).decode()
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)  # SQLite: naive
        return aware.astimezone(timezone.utc).isoformat()
    return value


def _typed(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    unknown = set(row) - set(table.columns.keys())
    if unknown:
        raise DumpError(f"table {table.name}: columns this schema does not have: {sorted(unknown)}")
    return {name: _column_value(table.columns[name].type, value) for name, value in row.items()}


def _column_value(kind, value: Any) -> Any:
    if isinstance(value, str) and isinstance(kind, DateTime):
        return datetime.fromisoformat(value)
    if isinstance(value, str) and isinstance(kind, LargeBinary):
        return base64.b64decode(value)
    return value


def _move_sequence(s: Session, table: Table) -> None:
    """PostgreSQL hands out ids from a sequence, which rows inserted with their ids do not
    move: set it past them, or the next submission would collide with an imported one."""
    if s.bind.dialect.name != "postgresql":
        return
    for column in table.primary_key.columns:
        if column.autoincrement is True or (column.autoincrement == "auto"
                                            and column.type.python_type is int):
            s.execute(text(f"SELECT setval(pg_get_serial_sequence('{table.name}', "
                           f"'{column.name}'), COALESCE(MAX({column.name}), 0) + 1, false) "
                           f"FROM {table.name}"))
