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

from ddz.environment import (
    bool_of,
    float_of,
    host_port_of,
    int_of,
    limit_of,
    path_of,
    trace_url_of,
    traces_of,
    web_port_of,
)
from ddz.player_kinds import DEFAULT_PLAYER, PLAYER_KINDS
from ddz.urls import nats_servers, sqlite_url

# The adapters take these from here too (the settings' URLs, redacted).
from ddz.urls import normalize_database_url as normalize_database_url
from ddz.urls import redacted_servers as redacted_servers
from ddz.urls import redacted_url as redacted_url

LogFormat = Literal["json", "console", "auto"]

SERVICE_PORTS: Mapping[str, int] = MappingProxyType(
    {
        "dealer": 50051,
        "rules": 50052,
        "bot": 50053,
        "settlement": 50054,
        "table": 50055,
        "recorder": 50056,
        # The dispute desk: its gRPC port answers health only; its pages are HTTPS on
        # ``DDZ_CONSOLE_WEB_PORT`` (services/console).
        "console": 50057,
        "play": 50058,  # health only; the page and gRPC-Web on DDZ_PLAY_WEB_PORT
    }
)
"""The services of the suite and their default gRPC ports (``DDZ_<SERVICE>_PORT``)."""

DEFAULT_CONSOLE_WEB_PORT = 8443
"""Where the console serves its pages over HTTPS by default (``DDZ_CONSOLE_WEB_PORT``)."""
DEFAULT_PLAY_WEB_PORT = 8444  # the players' web front's page and gRPC-Web (services/play)
CONSOLE_SESSION_TTL = 30 * 60.0
"""Seconds a console session lasts after sign-in (``DDZ_CONSOLE_SESSION_TTL``)."""

METRICS_PORT_OFFSET = 1000
"""A service's default metrics port is its gRPC port plus this (rules: 51052)."""
BOT_PARTITIONS_MAX = 64
"""A bot partition is whole subject buckets (``ddz.adapters.messaging.subjects.BUCKETS``,
64): no more partitions than buckets."""

RETIRED: Mapping[str, str] = MappingProxyType(
    {
        "DDZ_OPERATOR_KEY": "player and operator tokens are JWTs signed with the login key "
        "(DDZ_LOGIN_KEY) and verified with its public keys (DDZ_LOGIN_JWKS); "
        "see docs/SECURITY.md",
    }
)
"""Variables a deployment may still set that no longer mean anything: refused by name, so
a setting that would be ignored stops the service instead."""

WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]"})
"""Listen hosts that mean every interface; clients on this host dial loopback instead."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "console", "auto")
AUDIT_KEY_FILE = "audit.key"
DEFAULT_STREAM_MAX_AGE = 7 * 24 * 3600.0
"""Seconds an event stays on the bus by default (``DDZ_STREAM_MAX_AGE``): readers of an
older hand go to the recorder's store."""
MAX_STREAM_REPLICAS = 5  # JetStream's own limit
OPERATOR = "operator"
"""The identity of the project's own tools (``ddz audit``, ``simulate``, ``bench``...)
to the services: their certificate's name (``ddz.adapters.security.certs``)."""
TLS_DIR = "tls"
"""Where under the data dir each identity's certificate and key are by default."""
DEFAULT_MAX_CONCURRENT_RPCS = 2000
"""Calls in flight one server takes at once (``DDZ_MAX_CONCURRENT_RPCS``); more are
refused RESOURCE_EXHAUSTED. Each watching seat holds one stream open."""


@dataclass(frozen=True, slots=True)
class Settings:
    """One immutable snapshot of the configuration. Build it with ``from_env``."""

    data_dir: Path = Path(".ddz")
    database_url: str = ""
    nats_url: str = ""
    # How often the nats-server ``ddz up`` starts syncs JetStream files to disk
    # (``DDZ_NATS_SYNC``): "" = the server's default (every 2 minutes), "always", or a
    # duration such as "1s" (docs/OPERATIONS.md, "What a crash can lose").
    nats_sync: str = ""
    # Who this process is to NATS (none set: no credentials, or the service's own seed
    # under ``<data dir>/nats/``, see ``ddz.adapters.messaging.nats_auth``) and TLS to NATS.
    nats_creds_file: Path | None = None
    nats_nkey_seed_file: Path | None = None
    nats_user: str = ""
    nats_password: str = field(default="", repr=False)
    nats_ca_file: Path | None = None
    nats_cert_file: Path | None = None
    nats_key_file: Path | None = None
    host: str = "127.0.0.1"
    ports: Mapping[str, int] = field(default_factory=lambda: SERVICE_PORTS)
    # Where clients dial each service (``DDZ_<NAME>_ADDR``) and where each listens
    # (``DDZ_<NAME>_LISTEN``); a service missing here falls back to host and port.
    addresses: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    listen: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # ``DDZ_<NAME>_METRICS_PORT`` of the services that set one (``metrics_address``).
    metrics_ports: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    # ``DDZ_<NAME>_PROBE_PORT`` of the services that set one: a plaintext listener with the
    # health service alone, for probes that cannot speak TLS (``probe_address``).
    probe_ports: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    log_level: str = "INFO"
    log_format: LogFormat = "auto"
    log_to_file: bool = False
    audit_key: bytes = field(default=b"", repr=False)
    audit_key_id: str = "k1"
    audit_signing_key_file: Path | None = None  # None: <data dir>/keys/audit-signing.key
    audit_public_keys_file: Path | None = None  # None: <data dir>/keys/audit-public.json
    rpc_timeout: float = 5.0
    turn_timeout: float = 20.0  # a turn's seconds (a room's own turn_seconds at most this)
    timeouts_to_autoplay: int = 2  # timeouts in a row that put a seat in auto-play; 0: never
    autoplay_turn_timeout: float = 3.0  # a turn's seconds in auto-play (at most turn_timeout)
    reconnect_grace: float = 30.0  # a dropped stream not back this long: disconnected
    stall_margin: float = 5.0  # a hand idle turn_timeout + this long: its seat on turn is dropped
    max_message_bytes: int = 1024 * 1024
    rooms_file: Path | None = None  # None: the rooms shipped with the table service
    table_token_key: bytes = field(default=b"", repr=False)  # empty: a file (token_keys.py)
    login_key_file: Path | None = None  # None: <data dir>/keys/login.key (token_keys.py)
    login_jwks_file: Path | None = None  # None: <data dir>/keys/login.jwks.json
    bot_player: str = DEFAULT_PLAYER  # one of ddz.player_kinds.PLAYER_KINDS
    bot_max_ms: float = 250.0  # wall-clock cap on one strong-bot decision
    atomic_decisions: bool = True  # a decision's events as one JetStream atomic batch
    restart_limit: int = 5  # restarts of one child `ddz up` allows in restart_window
    restart_window: float = 60.0  # seconds; one more exit in it is a crash loop
    # The DDZ stream as a starting service creates it (an existing one is left alone).
    stream_replicas: int = 1  # 3 on a cluster of three
    stream_max_age: float | None = DEFAULT_STREAM_MAX_AGE  # seconds; None: no limit
    stream_max_bytes: int | None = None  # None: no limit
    # Instances (ddz.adapters.messaging.lease; docs/ARCHITECTURE.md "Instances").
    lease_ttl: float = 20.0  # DDZ_LEASE_TTL: seconds a dead holder's lease outlives it
    bot_partitions: int = 1  # DDZ_BOT_PARTITIONS: >1 shares the hands among bot instances
    # DDZ_TABLE_ADVERTISE: host:port the other table instances dial this one at while it
    # is the active one; "": where it listens (loopback for a wildcard host).
    table_advertise: str = ""
    # gRPC over TLS (ddz.adapters.security.certs; docs/SECURITY.md "gRPC"). Unset paths are under
    # <data dir>/tls/: ca.crt, <identity>.crt, <identity>.key.
    tls_ca_file: Path | None = None  # DDZ_TLS_CA: the CA bundle this process trusts
    tls_cert_file: Path | None = None  # DDZ_TLS_CERT: this process's own certificate
    tls_key_file: Path | None = None  # DDZ_TLS_KEY: and its private key
    insecure: bool = False  # DDZ_INSECURE: plaintext gRPC, for local development only
    # Who this process is to the services it calls: a service's name (set by the
    # service runner, ``as_identity``), else the operator's tools. Not read from env.
    identity: str = OPERATOR
    max_concurrent_rpcs: int = DEFAULT_MAX_CONCURRENT_RPCS  # DDZ_MAX_CONCURRENT_RPCS
    # The table service's abuse limits and seat tokens (docs/SECURITY.md "Abuse limits").
    seat_token_ttl: float = 15 * 60.0  # DDZ_SEAT_TOKEN_TTL: seconds a seat token lasts
    join_rate: float = 1.0  # DDZ_JOIN_RATE: a player's JoinRoom/RefreshSeatToken per second
    join_burst: int = 10  # DDZ_JOIN_BURST: ...and how many at once
    move_rate: float = 20.0  # DDZ_MOVE_RATE: a player's moves and hints per second
    move_burst: int = 100  # DDZ_MOVE_BURST: ...and how many at once
    seat_streams: int = 4  # DDZ_SEAT_STREAMS: WatchHand streams open at once per seat
    # Signed events (ddz.adapters.security.event_signing; docs/SECURITY.md "Signed events").
    event_signing_key_file: Path | None = None  # DDZ_EVENT_SIGNING_KEY: this producer's key
    event_keyring_file: Path | None = None  # DDZ_EVENT_KEYRING: the producers' public keys
    # The console (services/console; docs/OPERATIONS.md "The dispute desk").
    console_web_port: int = DEFAULT_CONSOLE_WEB_PORT  # DDZ_CONSOLE_WEB_PORT: its HTTPS pages
    console_session_ttl: float = CONSOLE_SESSION_TTL  # DDZ_CONSOLE_SESSION_TTL
    play_web_port: int = DEFAULT_PLAY_WEB_PORT  # DDZ_PLAY_WEB_PORT (services/play)
    play_guests: bool = False  # DDZ_PLAY_GUESTS: the page may make guests' player tokens
    # DDZ_TRACE_URL: a trace's page in the operator's tracing UI, "{trace_id}" in it; the
    # desk links each event's trace id there (blank: the id is shown as text)
    trace_url: str = ""
    # Traces (ddz.adapters.telemetry.tracing; docs/OPERATIONS.md "Traces"): OpenTelemetry's own
    # variables, not DDZ_*; the SDK reads the rest (endpoint, sampler, resource) itself.
    traces_exporter: str = ""  # OTEL_TRACES_EXPORTER: "" (unset or none: off), otlp, console
    traces_protocol: str = "http/protobuf"  # OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, or grpc

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every ``DDZ_*`` variable (from ``os.environ`` unless given)."""
        env = os.environ if environ is None else environ
        for name, instead in RETIRED.items():
            if env.get(name, "").strip():
                raise ValueError(f"{name} is no longer read: {instead}")
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
        if nats_url:
            nats_url = ",".join(nats_servers(nats_url))  # each checked, spaces dropped
        ports = {
            service: int_of(env, f"DDZ_{service.upper()}_PORT", default, low=0, high=65535)
            for service, default in SERVICE_PORTS.items()
        }
        addresses = targets_of(env, "ADDR", several=True)
        listen = targets_of(env, "LISTEN")
        metrics_ports = {
            service: int_of(env, f"DDZ_{service.upper()}_METRICS_PORT", 0, low=0, high=65535)
            for service in SERVICE_PORTS
            if env.get(f"DDZ_{service.upper()}_METRICS_PORT", "").strip()
        }
        probe_ports = {
            service: int_of(env, f"DDZ_{service.upper()}_PROBE_PORT", 0, low=0, high=65535)
            for service in SERVICE_PORTS
            if env.get(f"DDZ_{service.upper()}_PROBE_PORT", "").strip()
        }
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
        nats_sync = env.get("DDZ_NATS_SYNC", "").strip().lower()
        if nats_sync and not re.fullmatch(r"always|[1-9][0-9]*(ms|s|m|h)", nats_sync):
            raise ValueError(
                "DDZ_NATS_SYNC must be 'always' or a duration such as 1s or 500ms, "
                f"got {nats_sync!r}"
            )
        traces_exporter, traces_protocol = traces_of(env)
        audit_key_id = env.get("DDZ_AUDIT_KEY_ID", "k1").strip() or "k1"
        if not audit_key_id.isascii() or not audit_key_id.isprintable():
            raise ValueError("DDZ_AUDIT_KEY_ID must be printable ASCII")
        return cls(
            data_dir=data_dir,
            database_url=normalize_database_url(database_url),
            nats_url=nats_url,
            nats_sync=nats_sync,
            nats_creds_file=path_of(env, "DDZ_NATS_CREDS"),
            nats_nkey_seed_file=path_of(env, "DDZ_NATS_NKEY_SEED"),
            nats_user=env.get("DDZ_NATS_USER", "").strip(),
            nats_password=env.get("DDZ_NATS_PASSWORD", ""),
            nats_ca_file=path_of(env, "DDZ_NATS_CA"),
            nats_cert_file=path_of(env, "DDZ_NATS_CERT"),
            nats_key_file=path_of(env, "DDZ_NATS_KEY"),
            host=env.get("DDZ_HOST", "").strip() or "127.0.0.1",
            ports=MappingProxyType(ports),
            addresses=MappingProxyType(addresses),
            listen=MappingProxyType(listen),
            metrics_ports=MappingProxyType(metrics_ports),
            probe_ports=MappingProxyType(probe_ports),
            log_level=log_level,
            log_format=log_format,  # checked against LOG_FORMATS above
            log_to_file=bool_of(env, "DDZ_LOG_TO_FILE", False),
            traces_exporter=traces_exporter,
            traces_protocol=traces_protocol,
            audit_key=env.get("DDZ_AUDIT_KEY", "").encode("utf-8"),
            audit_key_id=audit_key_id,
            audit_signing_key_file=path_of(env, "DDZ_AUDIT_SIGNING_KEY"),
            audit_public_keys_file=path_of(env, "DDZ_AUDIT_PUBLIC_KEYS"),
            rpc_timeout=float_of(env, "DDZ_RPC_TIMEOUT", 5.0),
            turn_timeout=float_of(env, "DDZ_TURN_TIMEOUT", 20.0),
            timeouts_to_autoplay=int_of(env, "DDZ_TIMEOUTS_TO_AUTOPLAY", 2, low=0, high=100),
            autoplay_turn_timeout=float_of(env, "DDZ_AUTOPLAY_TURN_TIMEOUT", 3.0),
            reconnect_grace=float_of(env, "DDZ_RECONNECT_GRACE", 30.0),
            stall_margin=float_of(env, "DDZ_STALL_MARGIN", 5.0),
            max_message_bytes=int_of(
                env, "DDZ_MAX_MESSAGE_BYTES", 1024 * 1024, low=1024, high=64 * 1024 * 1024
            ),
            rooms_file=path_of(env, "DDZ_ROOMS_FILE"),
            table_token_key=env.get("DDZ_TABLE_TOKEN_KEY", "").encode("utf-8"),
            login_key_file=path_of(env, "DDZ_LOGIN_KEY"),
            login_jwks_file=path_of(env, "DDZ_LOGIN_JWKS"),
            bot_player=bot_player,
            bot_max_ms=float_of(env, "DDZ_BOT_MAX_MS", 250.0),
            atomic_decisions=bool_of(env, "DDZ_ATOMIC_DECISIONS", True),
            restart_limit=int_of(env, "DDZ_RESTART_LIMIT", 5, low=0, high=1000),
            restart_window=float_of(env, "DDZ_RESTART_WINDOW", 60.0),
            stream_replicas=int_of(env, "DDZ_STREAM_REPLICAS", 1, low=1, high=MAX_STREAM_REPLICAS),
            stream_max_age=limit_of(env, "DDZ_STREAM_MAX_AGE", DEFAULT_STREAM_MAX_AGE, float),
            stream_max_bytes=limit_of(env, "DDZ_STREAM_MAX_BYTES", None, int),
            lease_ttl=float_of(env, "DDZ_LEASE_TTL", 20.0),
            bot_partitions=int_of(env, "DDZ_BOT_PARTITIONS", 1, low=1, high=BOT_PARTITIONS_MAX),
            table_advertise=host_port_of(env, "DDZ_TABLE_ADVERTISE"),
            tls_ca_file=path_of(env, "DDZ_TLS_CA"),
            tls_cert_file=path_of(env, "DDZ_TLS_CERT"),
            tls_key_file=path_of(env, "DDZ_TLS_KEY"),
            insecure=bool_of(env, "DDZ_INSECURE", False),
            max_concurrent_rpcs=int_of(
                env, "DDZ_MAX_CONCURRENT_RPCS", DEFAULT_MAX_CONCURRENT_RPCS, low=1, high=1_000_000
            ),
            seat_token_ttl=float_of(env, "DDZ_SEAT_TOKEN_TTL", 15 * 60.0),
            join_rate=float_of(env, "DDZ_JOIN_RATE", 1.0),
            join_burst=int_of(env, "DDZ_JOIN_BURST", 10, low=1, high=1_000_000),
            move_rate=float_of(env, "DDZ_MOVE_RATE", 20.0),
            move_burst=int_of(env, "DDZ_MOVE_BURST", 100, low=1, high=1_000_000),
            seat_streams=int_of(env, "DDZ_SEAT_STREAMS", 4, low=1, high=1000),
            event_signing_key_file=path_of(env, "DDZ_EVENT_SIGNING_KEY"),
            event_keyring_file=path_of(env, "DDZ_EVENT_KEYRING"),
            console_web_port=web_port_of(env, "DDZ_CONSOLE_WEB_PORT", DEFAULT_CONSOLE_WEB_PORT),
            console_session_ttl=float_of(env, "DDZ_CONSOLE_SESSION_TTL", CONSOLE_SESSION_TTL),
            play_web_port=web_port_of(env, "DDZ_PLAY_WEB_PORT", DEFAULT_PLAY_WEB_PORT),
            play_guests=bool_of(env, "DDZ_PLAY_GUESTS", False),
            trace_url=trace_url_of(env),
        )

    def __repr__(self) -> str:
        """The dataclass's repr without the keys (``repr=False``) and without the URLs'
        passwords: settings end up in tracebacks, logs and test reports."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        shown["database_url"] = redacted_url(self.database_url)
        shown["nats_url"] = redacted_servers(self.nats_url)
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

    def targets(self, service: str) -> tuple[str, ...]:
        """The instances of ``service`` clients may dial: ``address`` split at its commas
        (``DDZ_RULES_ADDR=10.0.0.1:50052,10.0.0.2:50052``). An entry may itself name
        several (``dns:///rules:50052``); ``ddz.adapters.rpc.routing`` resolves it."""
        return tuple(self.address(service).split(","))

    def listen_address(self, service: str, port: int | None = None) -> str:
        """Where ``service`` listens: ``DDZ_<NAME>_LISTEN``, else ``DDZ_HOST`` and the
        service's port; ``port`` (0: any free one) replaces the port of either."""
        listen = self.listen.get(service)
        if port is None:
            return listen or f"{self.host}:{self.port(service)}"
        host = listen.rsplit(":", 1)[0] if listen else self.host
        return f"{host}:{port}"

    def metrics_port(self, service: str) -> int:
        """``DDZ_<NAME>_METRICS_PORT``, else the gRPC port + ``METRICS_PORT_OFFSET``
        (0, any free port, when that is no port: the gRPC port is 0 or too high)."""
        port = self.metrics_ports.get(service)
        if port is not None:
            return port
        grpc_port = self.port(service)
        shifted = grpc_port + METRICS_PORT_OFFSET
        return shifted if grpc_port and shifted <= 65535 else 0

    def metrics_address(self, service: str) -> str:
        """Where ``service`` serves its Prometheus metrics: the host it listens on
        (``listen_address``) and its ``metrics_port``."""
        return self.listen_address(service, self.metrics_port(service))

    def probe_address(self, service: str) -> str | None:
        """Where ``service`` answers health checks in plaintext (``DDZ_<NAME>_PROBE_PORT``),
        or None: no such listener (the default; health is on the TLS port as always)."""
        port = self.probe_ports.get(service)
        return None if port is None else self.listen_address(service, port)

    @property
    def console_web_address(self) -> str:
        """Where the console serves its pages: the host it listens on and
        ``DDZ_CONSOLE_WEB_PORT``."""
        return self.listen_address("console", self.console_web_port)

    def with_addresses(self, **targets: str) -> Settings:
        """A copy in which clients dial the given services at the given targets."""
        return replace(self, addresses=MappingProxyType({**self.addresses, **targets}))

    def as_identity(self, identity: str) -> Settings:
        """A copy that calls other services as ``identity`` (a service's own clients)."""
        return replace(self, identity=identity)

    @property
    def tls_ca_path(self) -> Path:
        """The CA bundle gRPC peers are checked against (``DDZ_TLS_CA``)."""
        return self.tls_ca_file or self.data_dir / TLS_DIR / "ca.crt"

    @property
    def tls_cert_path(self) -> Path:
        """This process's certificate (``DDZ_TLS_CERT``, else its identity's)."""
        return self.tls_cert_file or self.data_dir / TLS_DIR / f"{self.identity}.crt"

    @property
    def tls_key_path(self) -> Path:
        """This process's private key (``DDZ_TLS_KEY``, else its identity's)."""
        return self.tls_key_file or self.data_dir / TLS_DIR / f"{self.identity}.key"

    @property
    def nats_servers(self) -> tuple[str, ...]:
        """The NATS servers to connect to (empty: the default local server)."""
        return nats_servers(self.nats_url) if self.nats_url else ()

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def nats_store_dir(self) -> Path:
        """JetStream's file store when the suite starts its own nats-server."""
        return self.data_dir / "jetstream"

    @property
    def audit_signing_key_path(self) -> Path:
        """The recorder's Ed25519 key that signs chain heads (``DDZ_AUDIT_SIGNING_KEY``)."""
        return self.audit_signing_key_file or self.data_dir / "keys" / "audit-signing.key"

    @property
    def audit_public_keys_path(self) -> Path:
        """The keyring auditors verify heads with (``DDZ_AUDIT_PUBLIC_KEYS``): public."""
        return self.audit_public_keys_file or self.data_dir / "keys" / "audit-public.json"

    def event_signing_key_path(self, producer: str) -> Path:
        """The Ed25519 key ``producer`` signs its events with (``DDZ_EVENT_SIGNING_KEY``,
        else ``<data dir>/keys/events/<producer>.key``)."""
        return self.event_signing_key_file or self.data_dir / "keys" / "events" / f"{producer}.key"

    @property
    def event_keyring_path(self) -> Path:
        """The producers' public keys consumers verify events with (``DDZ_EVENT_KEYRING``)."""
        return self.event_keyring_file or self.data_dir / "keys" / "event-keyring.json"

    def require_audit_key(self) -> bytes:
        """The HMAC key that signed chain heads before Ed25519 (``ddz.audit.keys`` reads
        it without ever creating one; nothing signs with it any more).

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


def targets_of(env: Mapping[str, str], suffix: str, *, several: bool = False) -> dict[str, str]:
    """``DDZ_<NAME>_<suffix>`` of every service that has one; ``several``: a comma list
    of targets is allowed (the instances of a service, ``Settings.targets``)."""
    found = {}
    for service in SERVICE_PORTS:
        name = f"DDZ_{service.upper()}_{suffix}"
        raw = env.get(name, "").strip()
        if not raw:
            continue
        parts = [part.strip() for part in raw.split(",")] if several else [raw]
        or_several = " (or several, separated by commas)" if several else ""
        for part in parts:
            if any(c.isspace() for c in part) or ":" not in part:
                raise ValueError(
                    f"{name} must be host:port or a gRPC target such as dns:///{service}:"
                    f"{SERVICE_PORTS[service]}{or_several}, got {raw!r}"
                )
        found[service] = ",".join(parts)
    return found
