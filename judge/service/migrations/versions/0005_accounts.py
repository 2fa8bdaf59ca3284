"""accounts: passwords, teams, several API tokens per user, browser sessions, sign-in failures,
and contests' public boards with a freeze

Each user's one token moves to `api_tokens` as "default" (it keeps working); users get an
optional argon2id password and team. Contests made before are private, without teams or freeze.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 05:30:00
"""

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("last_used_at", WHEN, nullable=True),
    )
    op.create_index("ix_api_tokens_user_id", "api_tokens", ["user_id"])
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("expires_at", WHEN, nullable=False),
    )
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("at", WHEN, nullable=False),
    )
    for column in ("name", "address", "at"):
        op.create_index(f"ix_login_failures_{column}", "login_failures", [column])
    op.execute("INSERT INTO api_tokens (user_id, name, token_hash, created_at) "
               "SELECT id, 'default', token_hash, created_at FROM users")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("token_hash")
        batch.add_column(sa.Column("password_hash", sa.String(200), nullable=True))
        batch.add_column(sa.Column("team", sa.String(64), nullable=True))
        batch.create_index("ix_users_team", ["team"])
    with op.batch_alter_table("contests") as batch:
        batch.add_column(sa.Column("public", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column("teams", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
        for column in ("freeze_at", "thaw_at", "unfrozen_at"):
            batch.add_column(sa.Column(column, WHEN, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("contests") as batch:
        for column in ("unfrozen_at", "thaw_at", "freeze_at", "teams", "public"):
            batch.drop_column(column)
    with op.batch_alter_table("users") as batch:
        batch.drop_index("ix_users_team")
        batch.drop_column("team")
        batch.drop_column("password_hash")
        batch.add_column(sa.Column("token_hash", sa.String(64), nullable=True))
    # each user keeps its oldest token; one that has none gets a token nobody knows
    users = sa.table("users", sa.column("id", sa.Integer), sa.column("token_hash", sa.String))
    connection = op.get_bind()
    oldest = dict(connection.execute(sa.text(
        "SELECT user_id, token_hash FROM api_tokens WHERE id IN "
        "(SELECT MIN(id) FROM api_tokens GROUP BY user_id)")).all())
    for (user_id,) in connection.execute(sa.select(users.c.id)).all():
        connection.execute(users.update().where(users.c.id == user_id).values(
            token_hash=oldest.get(user_id) or secrets.token_hex(32)))
    with op.batch_alter_table("users") as batch:
        batch.alter_column("token_hash", existing_type=sa.String(64), nullable=False)
        batch.create_unique_constraint("uq_users_token_hash", ["token_hash"])
    for name in ("login_failures", "sessions", "api_tokens"):
        op.drop_table(name)
