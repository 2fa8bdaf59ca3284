"""staged rejudges: judged aside, shown as a diff, applied or cancelled as a whole

A judging of a staged rejudge is not valid (no submission's result) until the rejudge is
applied. Judgings stored before are valid; rejudges made before have no state (counted as
their judgings ended). A downgrade drops the judgings of staged rejudges not applied (the older
schema would count them).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04 16:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("judgings") as batch:
        batch.add_column(sa.Column("valid", sa.Boolean(), nullable=False,
                                   server_default=sa.true()))
    with op.batch_alter_table("rejudges") as batch:
        batch.add_column(sa.Column("state", sa.String(16), nullable=True))
        batch.add_column(sa.Column("settled_by", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("settled_at", sa.DateTime(timezone=True), nullable=True))
        batch.create_foreign_key("fk_rejudges_settled_by_users", "users", ["settled_by"],
                                 ["id"])


def downgrade() -> None:
    with op.batch_alter_table("rejudges") as batch:
        batch.drop_constraint("fk_rejudges_settled_by_users", type_="foreignkey")
        batch.drop_column("settled_at")
        batch.drop_column("settled_by")
        batch.drop_column("state")
    op.execute(sa.text("DELETE FROM judgings WHERE valid = :no").bindparams(no=False))
    with op.batch_alter_table("judgings") as batch:
        batch.drop_column("valid")
