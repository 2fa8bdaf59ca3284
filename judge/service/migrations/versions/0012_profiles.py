"""profile submissions: contests that take them, and their Nsight Compute reports

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 17:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contests") as batch:
        batch.add_column(sa.Column("profile", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
    op.create_table(
        "profile_reports",
        sa.Column("judging_id", sa.Integer(), sa.ForeignKey("judgings.id"), primary_key=True),
        sa.Column("filename", sa.String(100), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("profile_reports")
    with op.batch_alter_table("contests") as batch:
        batch.drop_column("profile")
