"""The services' own tables (dealer seeds, settlement projection) and their migrations.

upgrade_service_db(engine)   # idempotent; safe from several processes at once
migrate(settings.store, settings.data_dir)  # the store's tables and these, once,
                                            # before the services start
"""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

from ddz.adapters.files.data_files import ensure_dir
from ddz.adapters.service_db import schema
from ddz.config.store import StoreSettings

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "alembic_version_services"

# See ddz.adapters.store.migrate: Alembic's migration context lives in module globals.
_LOCK = threading.Lock()


def upgrade_service_db(engine: Engine, revision: str = "head") -> None:
    """Bring the services' tables to ``revision`` (a no-op when already there)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option(
        "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
    )
    with _LOCK, engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            connection.execution_options(ddz_sqlite_begin="BEGIN IMMEDIATE")
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def migrate(store: StoreSettings, data_dir: Path) -> None:
    """Create or upgrade the store's and the services' tables once, before the services
    start, so they do not all race to do it."""
    from ddz.adapters.store import make_engine, upgrade_store

    ensure_dir(data_dir)
    engine = make_engine(store.database_url)
    try:
        upgrade_store(engine)
        upgrade_service_db(engine)
    finally:
        engine.dispose()


__all__ = ["MIGRATIONS_DIR", "VERSION_TABLE", "migrate", "schema", "upgrade_service_db"]
