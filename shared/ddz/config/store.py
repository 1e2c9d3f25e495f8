"""The event store and the services' databases: ``DDZ_DATABASE_URL``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ddz.urls import normalize_database_url, redacted_url, sqlite_url


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Where the events and the services' own rows are kept."""

    database_url: str = ""  # "" only before from_env: SQLite under the data dir

    def __repr__(self) -> str:
        """Without the URL's password: settings end up in tracebacks and logs."""
        return f"StoreSettings(database_url={redacted_url(self.database_url)!r})"


def store_from_env(env: Mapping[str, str], data_dir: Path) -> StoreSettings:
    database_url = env.get("DDZ_DATABASE_URL", "").strip() or sqlite_url(data_dir / "ddz.sqlite3")
    if "://" not in database_url:
        raise ValueError(
            f"DDZ_DATABASE_URL must be a SQLAlchemy URL such as sqlite:///path or "
            f"postgresql://user@host/db, got {redacted_url(database_url)!r}"
        )
    return StoreSettings(database_url=normalize_database_url(database_url))
