"""one record per judging; what a problem admits

A judging's result was spread over eleven columns; it is now one JSON record (the judge's
`JudgeResult.to_dict()`), with the four fields queries use kept as columns. `valid` was never
false and is gone. Problems keep their source limit and tested device kinds, so that a
submission is admitted or refused before it is queued.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 12:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# columns whose values move into the record, with what 0002 stored when there was none
MOVED = {"peak_memory_mb": None, "tests": [], "compile_log": "", "message": "", "flags": [],
         "applied": {}, "problem_version": None, "judge_version": None}
OLD_TYPES = {"peak_memory_mb": sa.Float(), "tests": sa.JSON(), "compile_log": sa.Text(),
             "message": sa.Text(), "flags": sa.JSON(), "applied": sa.JSON(),
             "problem_version": sa.String(length=32), "judge_version": sa.String(length=32)}


def _judgings(*names: str) -> sa.Table:
    columns = {"record": sa.JSON(), **OLD_TYPES, "valid": sa.Boolean(), "verdict": sa.String(8),
               "score": sa.Float(), "speedup": sa.Float(), "time_ms": sa.Float(),
               "state": sa.String(16)}
    return sa.table("judgings", sa.column("id", sa.Integer()),
                    *(sa.column(n, columns[n]) for n in names))


def record_of(row) -> dict:
    """The record of a judging stored by 0002 (phases and overhead were kept in `applied`)."""
    applied = dict(row.applied or {})
    phases = applied.pop("phases", {})
    overhead = applied.pop("overhead_s", None)
    if row.judge_version and "judge" not in applied:
        applied["judge"] = row.judge_version
    record = {"verdict": row.verdict, "score": row.score, "speedup": row.speedup,
              "time_ms": row.time_ms, "memory_mb": row.peak_memory_mb,
              "memory_measure": "process memory, peak (torch included)"
              if row.peak_memory_mb is not None else "",
              "tests": row.tests or [], "compile_log": row.compile_log or "",
              "message": row.message or "", "flags": row.flags or [], "applied": applied,
              "problem_version": row.problem_version or "", "phases": phases}
    if overhead is not None:
        record["overhead_s"] = overhead
    return record


def upgrade() -> None:
    # plain ALTERs on `problems`: SQLite's batch mode copies a table, which the foreign keys
    # of `submissions` forbid
    op.add_column("problems", sa.Column("source_kb", sa.Integer(), nullable=False,
                                        server_default="256"))
    op.add_column("problems", sa.Column("devices", sa.JSON(), nullable=True))
    with op.batch_alter_table("judgings") as batch:
        batch.add_column(sa.Column("record", sa.JSON(), nullable=True))
    bind = op.get_bind()
    old = _judgings("state", "verdict", "score", "speedup", "time_ms", *MOVED)
    new = _judgings("record")
    for row in bind.execute(sa.select(old).where(old.c.state == "DONE")).all():
        bind.execute(new.update().where(new.c.id == row.id).values(record=record_of(row)))
    with op.batch_alter_table("judgings") as batch:
        for name in (*MOVED, "valid"):
            batch.drop_column(name)


def downgrade() -> None:
    with op.batch_alter_table("judgings") as batch:
        for name, kind in OLD_TYPES.items():
            default = MOVED[name]
            nullable = default is None
            server = None if nullable else sa.text("'[]'" if default == [] else "'{}'"
                                                   if default == {} else "''")
            batch.add_column(sa.Column(name, kind, nullable=nullable, server_default=server))
        batch.add_column(sa.Column("valid", sa.Boolean(), nullable=False,
                                   server_default=sa.true()))
    bind = op.get_bind()
    table = _judgings("record", *MOVED)
    for row in bind.execute(sa.select(table.c.id, table.c.record)
                            .where(table.c.record.is_not(None))).all():
        record = row.record
        applied = dict(record.get("applied") or {})
        applied["phases"] = record.get("phases") or {}
        if "overhead_s" in record:
            applied["overhead_s"] = record["overhead_s"]
        bind.execute(table.update().where(table.c.id == row.id).values(
            peak_memory_mb=record.get("memory_mb"), tests=record.get("tests") or [],
            compile_log=record.get("compile_log") or "", message=record.get("message") or "",
            flags=record.get("flags") or [], applied=applied,
            problem_version=record.get("problem_version") or None,
            judge_version=applied.get("judge")))
    with op.batch_alter_table("judgings") as batch:
        batch.drop_column("record")
    op.drop_column("problems", "devices")
    op.drop_column("problems", "source_kb")
