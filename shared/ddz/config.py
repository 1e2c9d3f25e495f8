"""All settings of the suite, read once from ``DDZ_*`` environment variables.

``Settings.from_env()`` is the only place that reads the environment; everything else
receives a ``Settings``. Every variable is documented in ``docs/CONFIG.md``. A bad value
raises ``ValueError`` naming the variable, so the CLI prints one clear line.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from ddz.player_kinds import DEFAULT_PLAYER, PLAYER_KINDS

LogFormat = Literal["json", "console", "auto"]

SERVICE_PORTS: Mapping[str, int] = MappingProxyType(
    {
        "dealer": 50051,
        "rules": 50052,
        "bot": 50053,
        "settlement": 50054,
        "table": 50055,
        "recorder": 50056,
    }
)
"""The services of the suite and their default gRPC ports (``DDZ_<SERVICE>_PORT``)."""

WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]"})
"""Listen hosts that mean every interface; clients on this host dial loopback instead."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "console", "auto")
AUDIT_KEY_FILE = "audit.key"


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


@dataclass(frozen=True, slots=True)
class Settings:
    """One immutable snapshot of the configuration. Build it with ``from_env``."""

    data_dir: Path = Path(".ddz")
    database_url: str = ""
    nats_url: str = ""
    host: str = "127.0.0.1"
    ports: Mapping[str, int] = field(default_factory=lambda: SERVICE_PORTS)
    # Where clients dial each service (``DDZ_<NAME>_ADDR``) and where each listens
    # (``DDZ_<NAME>_LISTEN``); a service missing here falls back to host and port.
    addresses: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    listen: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    log_level: str = "INFO"
    log_format: LogFormat = "auto"
    log_to_file: bool = False
    audit_key: bytes = field(default=b"", repr=False)
    audit_key_id: str = "k1"
    rpc_timeout: float = 5.0
    turn_timeout: float = 20.0
    stall_margin: float = 5.0  # a hand idle turn_timeout + this long: its seat on turn is dropped
    max_message_bytes: int = 1024 * 1024
    rooms_file: Path | None = None  # None: the rooms shipped with the table service
    table_token_key: bytes = field(default=b"", repr=False)  # empty: derived (tokens.py)
    operator_key: bytes = field(default=b"", repr=False)  # empty: derived (tokens.py)
    bot_player: str = DEFAULT_PLAYER  # one of ddz.player_kinds.PLAYER_KINDS
    bot_max_ms: float = 250.0  # wall-clock cap on one strong-bot decision
    atomic_decisions: bool = True  # a decision's events as one JetStream atomic batch
    restart_limit: int = 5  # restarts of one child `ddz up` allows in restart_window
    restart_window: float = 60.0  # seconds; one more exit in it is a crash loop

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every ``DDZ_*`` variable (from ``os.environ`` unless given)."""
        env = os.environ if environ is None else environ
        data_dir = Path(env.get("DDZ_DATA_DIR", "").strip() or ".ddz").expanduser().resolve()
        database_url = env.get("DDZ_DATABASE_URL", "").strip() or sqlite_url(
            data_dir / "ddz.sqlite3"
        )
        if "://" not in database_url:
            raise ValueError(
                f"DDZ_DATABASE_URL must be a SQLAlchemy URL such as sqlite:///path or "
                f"postgresql://user@host/db, got {redacted_url(database_url)!r}"
            )
        nats_url = env.get("DDZ_NATS_URL", "").strip()
        if nats_url and not nats_url.startswith(("nats://", "tls://", "ws://", "wss://")):
            raise ValueError(
                "DDZ_NATS_URL must start with nats:// (or be empty), got "
                f"{redacted_url(nats_url, keep_user=False)!r}"
            )
        ports = {
            service: _int(env, f"DDZ_{service.upper()}_PORT", default, low=0, high=65535)
            for service, default in SERVICE_PORTS.items()
        }
        addresses = _targets(env, "ADDR")
        listen = _targets(env, "LISTEN")
        log_level = env.get("DDZ_LOG_LEVEL", "INFO").strip().upper() or "INFO"
        if log_level not in LOG_LEVELS:
            raise ValueError(
                f"DDZ_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}"
            )
        log_format = env.get("DDZ_LOG_FORMAT", "auto").strip().lower() or "auto"
        if log_format not in LOG_FORMATS:
            raise ValueError(
                f"DDZ_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}"
            )
        bot_player = env.get("DDZ_BOT_PLAYER", "").strip().lower() or DEFAULT_PLAYER
        if bot_player not in PLAYER_KINDS:
            raise ValueError(
                f"DDZ_BOT_PLAYER must be one of {', '.join(PLAYER_KINDS)}, got {bot_player!r}"
            )
        audit_key_id = env.get("DDZ_AUDIT_KEY_ID", "k1").strip() or "k1"
        if not audit_key_id.isascii() or not audit_key_id.isprintable():
            raise ValueError("DDZ_AUDIT_KEY_ID must be printable ASCII")
        return cls(
            data_dir=data_dir,
            database_url=normalize_database_url(database_url),
            nats_url=nats_url,
            host=env.get("DDZ_HOST", "").strip() or "127.0.0.1",
            ports=MappingProxyType(ports),
            addresses=MappingProxyType(addresses),
            listen=MappingProxyType(listen),
            log_level=log_level,
            log_format=log_format,  # checked against LOG_FORMATS above
            log_to_file=_bool(env, "DDZ_LOG_TO_FILE", False),
            audit_key=env.get("DDZ_AUDIT_KEY", "").encode("utf-8"),
            audit_key_id=audit_key_id,
            rpc_timeout=_float(env, "DDZ_RPC_TIMEOUT", 5.0),
            turn_timeout=_float(env, "DDZ_TURN_TIMEOUT", 20.0),
            stall_margin=_float(env, "DDZ_STALL_MARGIN", 5.0),
            max_message_bytes=_int(
                env, "DDZ_MAX_MESSAGE_BYTES", 1024 * 1024, low=1024, high=64 * 1024 * 1024
            ),
            rooms_file=_path(env, "DDZ_ROOMS_FILE"),
            table_token_key=env.get("DDZ_TABLE_TOKEN_KEY", "").encode("utf-8"),
            operator_key=env.get("DDZ_OPERATOR_KEY", "").encode("utf-8"),
            bot_player=bot_player,
            bot_max_ms=_float(env, "DDZ_BOT_MAX_MS", 250.0),
            atomic_decisions=_bool(env, "DDZ_ATOMIC_DECISIONS", True),
            restart_limit=_int(env, "DDZ_RESTART_LIMIT", 5, low=0, high=1000),
            restart_window=_float(env, "DDZ_RESTART_WINDOW", 60.0),
        )

    def __repr__(self) -> str:
        """The dataclass's repr without the keys (``repr=False``) and without the URLs'
        passwords: settings end up in tracebacks, logs and test reports."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        shown["database_url"] = redacted_url(self.database_url)
        shown["nats_url"] = redacted_url(self.nats_url, keep_user=False)
        return f"Settings({', '.join(f'{name}={value!r}' for name, value in shown.items())})"

    def port(self, service: str) -> int:
        """The gRPC port of ``service`` (one of ``SERVICE_PORTS``)."""
        try:
            return self.ports[service]
        except KeyError:
            raise ValueError(
                f"unknown service {service!r}; known: {', '.join(SERVICE_PORTS)}"
            ) from None

    def address(self, service: str) -> str:
        """Where clients dial ``service``: ``DDZ_<NAME>_ADDR`` (``host:port`` or any gRPC
        target, e.g. ``dns:///rules:50052``), else this host and the service's port
        (loopback when the host is a wildcard such as ``0.0.0.0``)."""
        port = self.port(service)
        target = self.addresses.get(service)
        if target:
            return target
        host = "127.0.0.1" if self.host in WILDCARD_HOSTS else self.host
        return f"{host}:{port}"

    def listen_address(self, service: str, port: int | None = None) -> str:
        """Where ``service`` listens: ``DDZ_<NAME>_LISTEN``, else ``DDZ_HOST`` and the
        service's port; ``port`` (0: any free one) replaces the port of either."""
        listen = self.listen.get(service)
        if port is None:
            return listen or f"{self.host}:{self.port(service)}"
        host = listen.rsplit(":", 1)[0] if listen else self.host
        return f"{host}:{port}"

    def with_addresses(self, **targets: str) -> Settings:
        """A copy in which clients dial the given services at the given targets."""
        return replace(self, addresses=MappingProxyType({**self.addresses, **targets}))

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def nats_store_dir(self) -> Path:
        """JetStream's file store when the suite starts its own nats-server."""
        return self.data_dir / "jetstream"

    def require_audit_key(self) -> bytes:
        """The HMAC key that signs chain heads.

        ``DDZ_AUDIT_KEY`` when set; otherwise a random key kept in
        ``<data dir>/audit.key`` (created on first use, mode 0600), so a fresh local
        stack signs without setup while an operator can supply their own key.
        """
        if self.audit_key:
            return self.audit_key
        path = self.data_dir / AUDIT_KEY_FILE
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                # O_EXCL: when several services start at once, exactly one creates it.
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "w", encoding="ascii") as out:
                    out.write(secrets.token_hex(32) + "\n")
        key = path.read_text(encoding="ascii").strip().encode("ascii")
        if not key:
            raise ValueError(f"audit key file {path} is empty; delete it or set DDZ_AUDIT_KEY")
        return key


def _targets(env: Mapping[str, str], suffix: str) -> dict[str, str]:
    """``DDZ_<NAME>_<suffix>`` of every service that has one."""
    found = {}
    for service in SERVICE_PORTS:
        name = f"DDZ_{service.upper()}_{suffix}"
        raw = env.get(name, "").strip()
        if not raw:
            continue
        if any(c.isspace() for c in raw) or ":" not in raw:
            raise ValueError(
                f"{name} must be host:port or a gRPC target such as dns:///{service}:"
                f"{SERVICE_PORTS[service]}, got {raw!r}"
            )
        found[service] = raw
    return found


def _path(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name, "").strip()
    return Path(raw).expanduser().resolve() if raw else None


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


def _int(env: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, got {raw!r}")
