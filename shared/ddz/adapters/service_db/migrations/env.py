"""Alembic environment of the services' tables (run by ``upgrade_service_db``).

Its own version table, so this lineage never meets the event store's.
"""

from __future__ import annotations

from ddz.adapters.service_db import VERSION_TABLE
from ddz.adapters.service_db.schema import metadata
from ddz.adapters.store.migration_env import run_migrations

MIGRATION_LOCK_ID = 0x64647A5F737663  # "ddz_svc": PostgreSQL advisory lock key

run_migrations(metadata, MIGRATION_LOCK_ID, VERSION_TABLE)
