"""Alembic environment of the services' tables (run by ``upgrade_service_db``).

Its own version table, so this lineage never meets the event store's. Concurrent
upgrades serialise as the store's do: SQLite BEGIN IMMEDIATE, PostgreSQL an advisory
transaction lock.
"""

from __future__ import annotations

from alembic import context
from ddz.adapters.service_db import VERSION_TABLE
from ddz.adapters.service_db.schema import metadata

MIGRATION_LOCK_ID = 0x64647A5F737663  # "ddz_svc"


def run_offline() -> None:
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        literal_binds=True,
        version_table=VERSION_TABLE,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_ID})")
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
