"""Run the store's Alembic migrations from code (no alembic.ini needed)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError

from ddz.adapters.files.data_files import BadFile, os_fix, os_problem
from ddz.adapters.store.sql import make_engine
from ddz.urls import normalize_database_url

STORE_FIX = (
    "restore it from a backup, or move it away (a new store is made at start), or point "
    "DDZ_DATABASE_URL at the event store"
)
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

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


def check_sqlite_file(path: Path, config: Config) -> None:
    """Refuse a SQLite file that cannot be the event store before anything opens it for
    writing (an engine's first connection already writes: it turns WAL on): unreadable,
    not a database, damaged (a page overwritten, the file cut short: SQLite notices only
    on the page it reads), or of a schema revision this code does not know (another
    program's, or a newer ddz's). A missing or empty file is a new store."""
    try:
        with path.open("rb"):
            pass
    except FileNotFoundError:
        return
    except OSError as exc:
        problem = f"cannot read the event store: {os_problem(exc)}"
        raise BadFile(path, problem, os_fix(exc, STORE_FIX)) from None
    try:
        uri = f"{path.resolve().as_uri().replace('file://', 'file:', 1)}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            problems = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            revisions = (
                [str(row[0]) for row in db.execute("SELECT version_num FROM alembic_version")]
                if "alembic_version" in tables
                else []
            )
    except sqlite3.DatabaseError as exc:
        raise BadFile(path, f"cannot be read as a SQLite database ({exc})", STORE_FIX) from None
    if problems != ["ok"]:
        raise BadFile(path, f"the event store is damaged ({problems[0]})", STORE_FIX)
    scripts = ScriptDirectory.from_config(config)
    for revision in revisions:
        try:
            scripts.get_revision(revision)
        except CommandError:
            raise BadFile(
                path,
                f"not an event store of this ddz (schema revision {revision!r} unknown)",
                STORE_FIX,
            ) from None


def upgrade_store(url: str | Engine, revision: str = "head") -> None:
    """Bring the store's schema to ``revision``; a no-op when it is already there.

    Safe to call from several threads and processes at once (see ``migrations/env.py``).
    """
    engine = make_engine(url) if isinstance(url, str) else url
    try:
        config = alembic_config(engine.url.render_as_string(hide_password=False))
        database = engine.url.database or ""
        if engine.dialect.name == "sqlite" and database not in ("", ":memory:"):
            check_sqlite_file(Path(database), config)
        with _ALEMBIC_LOCK, engine.connect() as connection:
            if connection.dialect.name == "sqlite":
                connection.execution_options(ddz_sqlite_begin="BEGIN IMMEDIATE")
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    except (DatabaseError, CommandError) as exc:
        if engine.dialect.name != "sqlite" or not engine.url.database:
            raise  # a server's store: its own errors say what is wrong
        why = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise BadFile(
            engine.url.database, f"cannot be used as the event store ({why})", STORE_FIX
        ) from None
    finally:
        if isinstance(url, str):
            engine.dispose()
