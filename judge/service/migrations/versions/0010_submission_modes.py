"""submission modes (test, benchmark, ranked) and contests' quotas per mode

Submissions made before are ranked (they counted); contests made before have no quotas. A
downgrade drops the test and benchmark submissions (the older schema would rank them).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04 16:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("mode", sa.String(16), nullable=False,
                                   server_default="ranked"))
    with op.batch_alter_table("contests") as batch:
        batch.add_column(sa.Column("quotas", sa.JSON(), nullable=True))


def downgrade() -> None:
    unranked = "SELECT id FROM submissions WHERE mode <> 'ranked'"
    op.execute(f"DELETE FROM judgings WHERE submission_id IN ({unranked})")
    op.execute(f"DELETE FROM sanctions WHERE submission_id IN ({unranked})")
    op.execute("DELETE FROM submissions WHERE mode <> 'ranked'")
    with op.batch_alter_table("contests") as batch:
        batch.drop_column("quotas")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("mode")
