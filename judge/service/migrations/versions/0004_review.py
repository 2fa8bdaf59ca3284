"""review: judgings KernelGuard puts on the organizers' review list

A hard-tier hit of KernelGuard (judge/judging/guard.py) marks a judging for an organizer to
look at; the record holds the hits, this column lets the review list be a query. Judgings
stored before have no opinion: not marked.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 19:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("judgings") as batch:
        batch.add_column(sa.Column("review", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
        batch.create_index("ix_judgings_review", ["review"])


def downgrade() -> None:
    with op.batch_alter_table("judgings") as batch:
        batch.drop_index("ix_judgings_review")
        batch.drop_column("review")
