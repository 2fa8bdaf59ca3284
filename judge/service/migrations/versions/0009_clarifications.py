"""clarifications and announcements, and who read them

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 16:20:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "clarifications",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("contest_id", sa.Integer(), sa.ForeignKey("contests.id"), nullable=True),
        sa.Column("problem", sa.String(64), nullable=True),
        sa.Column("asked_by", sa.Integer(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("question", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("answered_by", sa.Integer(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("public", sa.Boolean(), nullable=False),
    )
    op.create_index("ix_clarifications_contest_id", "clarifications", ["contest_id"])
    op.create_index("ix_clarifications_asked_by", "clarifications", ["asked_by"])
    op.create_table(
        "clarification_reads",
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), primary_key=True),
        sa.Column("clarification_id", sa.Integer(), sa.ForeignKey("clarifications.id"),
                  primary_key=True),
        sa.Column("read_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("clarification_reads")
    op.drop_table("clarifications")
