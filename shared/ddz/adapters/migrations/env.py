"""Alembic environment of the event store (run by ``ddz.adapters.store.upgrade_store``).

The caller passes an open connection in ``config.attributes["connection"]`` (so the
store's engine settings apply); offline mode (``--sql``) renders SQL for a DBA.
Concurrent upgrades serialise: SQLite opens the migration with BEGIN IMMEDIATE and
PostgreSQL takes a transaction-scoped advisory lock, so the second one finds the
schema at head and does nothing.
"""

from __future__ import annotations

from alembic import context
from ddz.adapters.store.schema import metadata

MIGRATION_LOCK_ID = 0x64647A5F6D6967  # "ddz_mig": PostgreSQL advisory lock key


def run_offline() -> None:
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=metadata)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_ID})")
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
