"""Run the store's Alembic migrations from code (no alembic.ini needed)."""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

from ddz.adapters.store.sql import make_engine
from ddz.config import normalize_database_url

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"

# Alembic keeps the running migration context in module globals (``alembic.context``,
# ``alembic.op``): two upgrades on threads of one process would run each other's
# operations on the wrong connection. Processes are serialised by the database instead.
_ALEMBIC_LOCK = threading.Lock()


def alembic_config(url: str) -> Config:
    """An Alembic config for the store at ``url`` (for ``alembic`` commands from code)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    config.set_main_option("sqlalchemy.url", normalize_database_url(url).replace("%", "%%"))
    return config


def upgrade_store(url: str | Engine, revision: str = "head") -> None:
    """Bring the store's schema to ``revision``; a no-op when it is already there.

    Safe to call from several threads and processes at once (see ``migrations/env.py``).
    """
    engine = make_engine(url) if isinstance(url, str) else url
    try:
        config = alembic_config(engine.url.render_as_string(hide_password=False))
        with _ALEMBIC_LOCK, engine.connect() as connection:
            if connection.dialect.name == "sqlite":
                connection.execution_options(ddz_sqlite_begin="BEGIN IMMEDIATE")
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        if isinstance(url, str):
            engine.dispose()
