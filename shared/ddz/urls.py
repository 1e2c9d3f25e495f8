"""The suite's URLs: the NATS server list (``DDZ_NATS_URL``), database URLs (SQLite by
path, the PostgreSQL driver) and their redacted forms, with no password, for logs and
errors."""

from __future__ import annotations

import re
from pathlib import Path


def nats_servers(url: str) -> tuple[str, ...]:
    """The server URLs of ``DDZ_NATS_URL``: one URL, or several separated by commas
    (the nodes of a cluster). ``ValueError`` for an entry that is not a NATS URL."""
    servers = tuple(part.strip() for part in url.split(","))
    for server in servers:
        if (
            not server.startswith(NATS_SCHEMES)
            or any(c.isspace() for c in server)
            or not server.partition("://")[2]
        ):
            raise ValueError(
                "DDZ_NATS_URL must be nats://host:port (or several, separated by commas, "
                f"or empty), got {redacted_url(server, keep_user=False)!r}"
            )
    return servers


def redacted_servers(url: str) -> str:
    """``redacted_url`` of each server of a comma-separated ``DDZ_NATS_URL``."""
    return ",".join(redacted_url(part.strip(), keep_user=False) for part in url.split(","))


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of a SQLite database file."""
    return f"sqlite:///{path.resolve()}"


def normalize_database_url(url: str) -> str:
    """Map the plain PostgreSQL URL forms to the psycopg (v3) driver that we install."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def redacted_url(url: str, *, keep_user: bool = True) -> str:
    """``url`` as it may be printed or logged: its password (and a ``password=`` query
    parameter) as ``***``; ``keep_user=False`` hides the user too (a NATS URL's user
    part may be a token). A password is read up to the URL's last ``@``, so one with an
    ``@`` of its own is hidden whole."""
    head, sep, rest = url.partition("://")
    if not sep:
        head, rest = "", url
    found = _CREDENTIALS.match(rest)
    if found:
        user = found["user"] + (":***" if found["password"] else "")
        rest = f"{user if keep_user else '***'}@{rest[found.end() :]}"
    return _PASSWORD_PARAMETER.sub(r"\1***", f"{head}{sep}{rest}")


_CREDENTIALS = re.compile(r"(?P<user>[^:/@]*)(?P<password>:.*)?@")


_PASSWORD_PARAMETER = re.compile(r"(?i)([?&]password=)[^&]*")


NATS_SCHEMES = ("nats://", "tls://", "ws://", "wss://")
