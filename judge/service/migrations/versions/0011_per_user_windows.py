"""per-user time windows and extra time (participations)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 16:40:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contests") as batch:
        batch.add_column(sa.Column("window_s", sa.Integer(), nullable=True))
    op.create_table(
        "participations",
        sa.Column("contest_id", sa.Integer(), sa.ForeignKey("contests.id"), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("extra_s", sa.Integer(), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("participations")
    with op.batch_alter_table("contests") as batch:
        batch.drop_column("window_s")
