"""Alembic environment of the event store (run by ``ddz.adapters.store.upgrade_store``)."""

from __future__ import annotations

from ddz.adapters.store.migration_env import run_migrations
from ddz.adapters.store.schema import metadata

MIGRATION_LOCK_ID = 0x64647A5F6D6967  # "ddz_mig": PostgreSQL advisory lock key

run_migrations(metadata, MIGRATION_LOCK_ID)
