"""hold flagged: a result on the review list counts on no board until an organizer decides

A judging on the review list (a charged forgery, a time under physics, a hard-tier KernelGuard
hit) is held off the boards of a contest that holds flagged results (all do unless set not
to; submissions outside a contest always) until an organizer clears it or disqualifies it.
Judgings stored before carry no decision: those on the review list are held like new ones.

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
    with op.batch_alter_table("contests") as batch:
        batch.drop_column("hold_flagged")
