from alembic import context

from judge.service.db import engine
from judge.service.models import Base

config = context.config


def run_migrations_online() -> None:
    with engine(config.get_main_option("sqlalchemy.url")).connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # a batch migration recreates a table: with foreign keys on, dropping the old copy
            # of a referenced table (users) fails, and the pragma is ignored inside a transaction
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        context.configure(connection=connection, target_metadata=Base.metadata,
                          render_as_batch=sqlite)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
        if sqlite:
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")
            connection.commit()
            if broken:
                raise RuntimeError(f"the migration left rows that reference none: {broken[:5]}")


run_migrations_online()
