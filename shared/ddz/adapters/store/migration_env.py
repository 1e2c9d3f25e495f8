"""What both Alembic lineages (the event store's and the services' tables) do in env.py.

The caller passes an open connection in ``config.attributes["connection"]`` (so the
engine settings of the store apply); offline mode (``--sql``) renders SQL for a DBA.
Concurrent upgrades serialise: SQLite opens the migration with BEGIN IMMEDIATE and
PostgreSQL takes a transaction-scoped advisory lock, so the second one finds the
schema at head and does nothing.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import MetaData


def run_migrations(
    metadata: MetaData, lock_id: int, version_table: str = "alembic_version"
) -> None:
    """Run the lineage's migrations; ``lock_id`` is its PostgreSQL advisory lock key."""
    if context.is_offline_mode():
        context.configure(
            url=context.config.get_main_option("sqlalchemy.url"),
            target_metadata=metadata,
            literal_binds=True,
            version_table=version_table,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=metadata, version_table=version_table)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({lock_id})")
        context.run_migrations()
