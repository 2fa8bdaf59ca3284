"""counters: the results version the leaderboard's cache is keyed on

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 08:45:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    counters = op.create_table(
        "counters",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.bulk_insert(counters, [{"name": "results", "value": 0}])


def downgrade() -> None:
    op.drop_table("counters")
