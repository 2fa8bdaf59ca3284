"""hold flagged results for review, and system tests

A result on the review list counts on no board until an organizer decides.

A judging on the review list (a charged forgery, a time under physics, a hard-tier KernelGuard
hit) is held off the boards of a contest that holds flagged results (all do unless set not
to; submissions outside a contest always) until an organizer clears it or disqualifies it.
Judgings stored before carry no decision: those on the review list are held like new ones.

A contest's system test (a rejudge of kind `system_test`, with its contest, the board before
and what it judged again) runs when the contest ends unless `system_test` is off. Contests made
before are off (one that ended must not be judged again unasked; an organizer starts one by
command). Rejudges made before are of kind `rejudge`.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 08:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contests") as batch:
        batch.add_column(sa.Column("hold_flagged", sa.Boolean(), nullable=False,
                                   server_default=sa.true()))
        batch.add_column(sa.Column("system_test", sa.Boolean(), nullable=False,
                                   server_default=sa.true()))
    op.execute(sa.text("UPDATE contests SET system_test = :off").bindparams(off=False))
    with op.batch_alter_table("rejudges") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False,
                                   server_default="rejudge"))
        batch.add_column(sa.Column("contest_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("before", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("covered", sa.JSON(), nullable=True))
        batch.create_foreign_key("fk_rejudges_contest_id_contests", "contests", ["contest_id"],
                                 ["id"])
        batch.create_index("ix_rejudges_contest_id", ["contest_id"])
    with op.batch_alter_table("judgings") as batch:
        batch.add_column(sa.Column("decision", sa.String(16), nullable=True))
        batch.add_column(sa.Column("decided_by", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("decision_note", sa.Text(), nullable=True))
        batch.create_foreign_key("fk_judgings_decided_by_users", "users", ["decided_by"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("judgings") as batch:
        batch.drop_constraint("fk_judgings_decided_by_users", type_="foreignkey")
        batch.drop_column("decision_note")
        batch.drop_column("decided_at")
        batch.drop_column("decided_by")
        batch.drop_column("decision")
    with op.batch_alter_table("rejudges") as batch:
        batch.drop_index("ix_rejudges_contest_id")
        batch.drop_constraint("fk_rejudges_contest_id_contests", type_="foreignkey")
        batch.drop_column("covered")
        batch.drop_column("before")
        batch.drop_column("contest_id")
        batch.drop_column("kind")
    with op.batch_alter_table("contests") as batch:
        batch.drop_column("system_test")
        batch.drop_column("hold_flagged")
