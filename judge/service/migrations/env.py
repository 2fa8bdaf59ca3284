from alembic import context

from judge.service.db import engine
from judge.service.models import Base

config = context.config


def run_migrations_online() -> None:
    with engine(config.get_main_option("sqlalchemy.url")).connect() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata,
                          render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
