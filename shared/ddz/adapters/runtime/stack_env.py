"""The settings of the stack's children: the services it runs, the ``DDZ_*`` environment
that gives a child the stack's ``Settings``, the names a child has in its traces, the
ports a service's settings name or get free. It takes the whole ``Settings``: it writes
every part of it into a child's environment."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from ddz.adapters.runtime.nats_server import (
    free_port,
)
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS

SERVICES: tuple[str, ...] = (
    "recorder", "settlement", "dealer", "rules", "bot", "table", "console", "play",
)  # fmt: skip
"""Every service of the suite, in start order (consumers of events before producers; the
console, which reads the recorder and settlement, and the players' web front, which
calls the table, last)."""

CLUSTER_DIR = "nats-cluster"
"""Where a local cluster's nodes keep their stores and configuration, under the data dir
(apart from the single server's store: the two never share a stream)."""

SCALED_BOT_PARTITIONS = 16
"""Partitions the bot's instances share when the stack starts several and no
``DDZ_BOT_PARTITIONS`` says how many (one partition cannot be shared)."""


def traced_as(env: Mapping[str, str], service: str, instance: str) -> dict[str, str]:
    """A child's environment naming it in its traces: ``OTEL_SERVICE_NAME`` ``ddz-<service>``
    and ``service.instance.id`` ``<instance>@<host>`` in ``OTEL_RESOURCE_ATTRIBUTES``,
    each unless the operator set it (their resource attributes are kept)."""
    named = dict(env)
    named.setdefault("OTEL_SERVICE_NAME", f"ddz-{service}")
    attributes = named.get("OTEL_RESOURCE_ATTRIBUTES", "").strip()
    keys = {item.split("=", 1)[0].strip() for item in attributes.split(",") if item.strip()}
    if "service.instance.id" not in keys:
        mine = f"service.instance.id={instance}@{socket.gethostname()}"
        named["OTEL_RESOURCE_ATTRIBUTES"] = f"{attributes},{mine}" if attributes else mine
    return named


def settings_env(settings: Settings) -> dict[str, str]:
    """The ``DDZ_*`` variables that make ``Settings.from_env()`` return ``settings``."""
    env = {
        "DDZ_DATA_DIR": str(settings.data_dir),
        "DDZ_DATABASE_URL": settings.store.database_url,
        "DDZ_HOST": settings.network.host,
        "DDZ_LOG_LEVEL": settings.telemetry.log_level,
        "DDZ_LOG_FORMAT": settings.telemetry.log_format,
        "DDZ_LOG_TO_FILE": "true" if settings.telemetry.log_to_file else "false",
        "DDZ_AUDIT_KEY_ID": settings.keys.audit_key_id,
        "DDZ_RPC_TIMEOUT": repr(settings.rpc.rpc_timeout),
        "DDZ_TURN_TIMEOUT": repr(settings.clocks.turn_timeout),
        "DDZ_TIMEOUTS_TO_AUTOPLAY": str(settings.clocks.timeouts_to_autoplay),
        "DDZ_AUTOPLAY_TURN_TIMEOUT": repr(settings.clocks.autoplay_turn_timeout),
        "DDZ_RECONNECT_GRACE": repr(settings.clocks.reconnect_grace),
        "DDZ_STALL_MARGIN": repr(settings.clocks.stall_margin),
        "DDZ_MAX_MESSAGE_BYTES": str(settings.rpc.max_message_bytes),
        "DDZ_BOT_PLAYER": settings.bot.bot_player,
        "DDZ_BOT_MAX_MS": repr(settings.bot.bot_max_ms),
        "DDZ_ATOMIC_DECISIONS": "1" if settings.bus.atomic_decisions else "0",
        "DDZ_RESTART_LIMIT": str(settings.supervision.restart_limit),
        "DDZ_RESTART_WINDOW": repr(settings.supervision.restart_window),
        "DDZ_STREAM_REPLICAS": str(settings.bus.stream_replicas),
        "DDZ_STREAM_MAX_AGE": repr(settings.bus.stream_max_age or 0),
        "DDZ_STREAM_MAX_BYTES": str(settings.bus.stream_max_bytes or 0),
        "DDZ_INSECURE": "1" if settings.tls.insecure else "0",
        "DDZ_MAX_CONCURRENT_RPCS": str(settings.rpc.max_concurrent_rpcs or ""),
        "DDZ_SEAT_TOKEN_TTL": repr(settings.table.seat_token_ttl),
        "DDZ_JOIN_RATE": repr(settings.table.join_rate),
        "DDZ_JOIN_BURST": str(settings.table.join_burst),
        "DDZ_MOVE_RATE": repr(settings.table.move_rate),
        "DDZ_MOVE_BURST": str(settings.table.move_burst),
        "DDZ_SEAT_STREAMS": str(settings.table.seat_streams),
        "DDZ_LEASE_TTL": repr(settings.bus.lease_ttl),
        "DDZ_BOT_PARTITIONS": str(settings.bot.bot_partitions),
        "DDZ_CONSOLE_WEB_PORT": str(settings.network.console_web_port),
        "DDZ_CONSOLE_SESSION_TTL": repr(settings.console.console_session_ttl),
        "DDZ_PLAY_WEB_PORT": str(settings.network.play_web_port),
        "DDZ_PLAY_GUESTS": "1" if settings.play.play_guests else "0",
    }
    if settings.bus.nats_url:
        env["DDZ_NATS_URL"] = settings.bus.nats_url
    if settings.bus.nats_sync:
        env["DDZ_NATS_SYNC"] = settings.bus.nats_sync
    if settings.table.table_advertise:
        env["DDZ_TABLE_ADVERTISE"] = settings.table.table_advertise
    for variable, path in (
        ("DDZ_NATS_CREDS", settings.bus.nats_creds_file),
        ("DDZ_NATS_NKEY_SEED", settings.bus.nats_nkey_seed_file),
        ("DDZ_NATS_CA", settings.bus.nats_ca_file),
        ("DDZ_NATS_CERT", settings.bus.nats_cert_file),
        ("DDZ_NATS_KEY", settings.bus.nats_key_file),
        ("DDZ_TLS_CA", settings.tls.tls_ca_file),
        ("DDZ_TLS_CERT", settings.tls.tls_cert_file),
        ("DDZ_TLS_KEY", settings.tls.tls_key_file),
        ("DDZ_EVENT_KEYRING", settings.keys.event_keyring_file),
        # Not DDZ_EVENT_SIGNING_KEY: it is one producer's own key, never the whole stack's.
    ):
        if path is not None:
            env[variable] = str(path)
    if settings.bus.nats_user:
        env["DDZ_NATS_USER"] = settings.bus.nats_user
        env["DDZ_NATS_PASSWORD"] = settings.bus.nats_password
    if settings.keys.audit_key:
        env["DDZ_AUDIT_KEY"] = settings.keys.audit_key.decode("utf-8")
    if settings.table.rooms_file is not None:
        env["DDZ_ROOMS_FILE"] = str(settings.table.rooms_file)
    if settings.keys.audit_signing_key_file is not None:
        env["DDZ_AUDIT_SIGNING_KEY"] = str(settings.keys.audit_signing_key_file)
    if settings.keys.audit_public_keys_file is not None:
        env["DDZ_AUDIT_PUBLIC_KEYS"] = str(settings.keys.audit_public_keys_file)
    if settings.keys.table_token_key:
        env["DDZ_TABLE_TOKEN_KEY"] = settings.keys.table_token_key.decode("utf-8")
    if settings.keys.login_key_file is not None:
        env["DDZ_LOGIN_KEY"] = str(settings.keys.login_key_file)
    if settings.keys.login_jwks_file is not None:
        env["DDZ_LOGIN_JWKS"] = str(settings.keys.login_jwks_file)
    for service, port in settings.network.ports.items():
        env[f"DDZ_{service.upper()}_PORT"] = str(port)
    for service, target in settings.network.addresses.items():
        env[f"DDZ_{service.upper()}_ADDR"] = target
    for service, listen in settings.network.listen.items():
        env[f"DDZ_{service.upper()}_LISTEN"] = listen
    for service, port in settings.network.metrics_ports.items():
        env[f"DDZ_{service.upper()}_METRICS_PORT"] = str(port)
    for service, port in settings.network.probe_ports.items():
        env[f"DDZ_{service.upper()}_PROBE_PORT"] = str(port)
    return env


def named_ports(settings: Settings, service: str) -> list[int]:
    """The ports ``settings`` give ``service``: gRPC, metrics, and a probe port if any."""
    ports = [settings.network.port(service), settings.network.metrics_port(service)]
    if service == "console":  # and its pages
        ports.append(settings.network.console_web_port)
    if service == "play":  # and its page and gRPC-Web
        ports.append(settings.network.play_web_port)
    return [*ports, settings.network.probe_ports.get(service, 0)]


def with_free_ports(settings: Settings, services: Iterable[str] = SERVICE_PORTS) -> Settings:
    """``settings`` with a free gRPC port and a free metrics port for each of ``services``
    (the metrics port named too: the gRPC port + the offset may be taken)."""
    host = settings.network.host
    names = list(services)
    ports = {**settings.network.ports, **{name: free_port(host) for name in names}}
    metrics = {**settings.network.metrics_ports, **{name: free_port(host) for name in names}}
    web = free_port(host) if "console" in names else settings.network.console_web_port
    play = free_port(host) if "play" in names else settings.network.play_web_port
    network = dataclasses.replace(
        settings.network, ports=MappingProxyType(ports), metrics_ports=MappingProxyType(metrics),
        console_web_port=web, play_web_port=play,
    )  # fmt: skip
    return dataclasses.replace(settings, network=network)
