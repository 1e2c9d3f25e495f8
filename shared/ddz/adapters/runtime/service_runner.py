"""One way to start a service: ``python -m services.NAME``, ``ddz serve NAME`` and the
in-process tests all go through here.

Each service package has ``services/<name>/app.py`` with ``async def build(settings,
**overrides) -> Service``, which builds the service whole (its connections opened, its
use cases, adapters and servicers made: no part of it is filled in later). A ``Service``
knows its gRPC servicers, and has ``start`` (start its durable consumers, leases and
loops: what must run before the first call is served), ``checks`` (what must work for
it to serve: its NATS connection, its database, its consumer loops;
``ddz.adapters.telemetry.health``) and ``close`` (stop consumers, close connections:
after the last call has finished). The runner wraps that in the
shared gRPC server of ``ddz.adapters.rpc.grpc_server`` (health true to the checks,
reflection, request-size limit, logging interceptor, graceful SIGTERM) and serves the
process's Prometheus metrics beside it (``ddz.adapters.telemetry.metrics``, on
``NetworkSettings.metrics_address``):

    main("rules")                                      # a process: settings, logging, serve
    running = await start_service("rules", settings, port=0)   # in-process, e.g. tests
    ...; await running.stop()

A composition root: it reads ``Settings.from_env()`` and hands each service's ``build``
the whole ``Settings``; the server and the bus get only their parts.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
import nats.errors
import structlog

from ddz.adapters.files.data_files import file_error
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.nats_auth import connect_options
from ddz.adapters.rpc.grpc_server import RunningServer, serve, start_server
from ddz.adapters.runtime.memory import settle_collector
from ddz.adapters.telemetry import metrics
from ddz.adapters.telemetry.health import Check
from ddz.adapters.telemetry.logging import configure_logging
from ddz.adapters.telemetry.metrics import MetricsServer, serve_metrics
from ddz.adapters.telemetry.tracing import configure_tracing, shutdown_tracing
from ddz.compiled import engine_build
from ddz.config import Settings
from ddz.config.bus import BusSettings
from ddz.config.network import SERVICE_PORTS, WILDCARD_HOSTS
from ddz.urls import redacted_servers, redacted_url

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
NATS_CONNECT_TIMEOUT = 30.0  # seconds a starting service waits for NATS

log = structlog.get_logger("ddz.service")


class Service(Protocol):
    """What ``services.<name>.app.build`` returns."""

    @property
    def full_names(self) -> Sequence[str]:
        """Full gRPC service names (``ddz.v1.RulesService``) for health and reflection."""
        ...

    def add_to_server(self, server: grpc.aio.Server) -> None: ...

    async def start(self) -> None: ...

    def checks(self) -> Mapping[str, Check]:
        """What must work for the service to serve, by name (asked once started)."""
        ...

    async def close(self) -> None: ...


Factory = Callable[..., Awaitable[Service]]


def checks_of(service: Service) -> Mapping[str, Check]:
    """The service's checks; a service that declares none is SERVING while it runs."""
    declared: Callable[[], Mapping[str, Check]] | None = getattr(service, "checks", None)
    return declared() if declared is not None else {}


def roles_of(service: Service) -> Mapping[str, Check]:
    """The service's roles (``health.HealthWatch``), by health name; most have none."""
    declared: Callable[[], Mapping[str, Check]] | None = getattr(service, "roles", None)
    return declared() if declared is not None else {}


def nats_url(settings: BusSettings) -> str:
    """``DDZ_NATS_URL``, or the default local server when it is not set."""
    return settings.nats_url or DEFAULT_NATS_URL


PING_INTERVAL = 3
MAX_OUTSTANDING_PINGS = 2
"""A NATS node on another host that goes silent (its link down, its host frozen) resets
no connection: the client finds out only when pings go unanswered. nats-py's defaults
(a ping every 120 s, two unanswered) would keep a service on a dead node for minutes,
longer than its leases; with these it moves to another node within about 9 s
(``tests/e2e/test_hosts.py`` cuts a host's link)."""


async def connect_bus(settings: BusSettings, service: str) -> EventBus:
    """The service's NATS connection with the ``DDZ`` stream ensured.

    Waits up to ``NATS_CONNECT_TIMEOUT`` for the server (it may be starting beside us),
    then fails with one clear ``OSError``; once connected, reconnects forever. NATS
    client errors are logged as one line each, without a traceback per retry; a lost
    connection as one ``nats_disconnected`` line, its return as one ``nats_reconnected``
    (after which the stream and the durable consumers are ensured again: the server may
    have lost its store), and a connection closed for good as ``nats_closed``.
    ``EventBus.connected`` says which.
    """
    url = nats_url(settings)
    shown = redacted_servers(url)

    async def on_error(exc: Exception) -> None:
        log.warning("nats_error", service=service, error=str(exc) or type(exc).__name__)

    async def on_disconnected(bus: EventBus) -> None:
        if not bus.closing:
            metrics.nats_connection(service, False)
            log.warning("nats_disconnected", service=service, url=shown)

    async def on_reconnected(bus: EventBus) -> None:
        server = bus.nc.connected_url
        at = redacted_url(server.geturl(), keep_user=False) if server else shown
        metrics.nats_connection(service, True, reconnected=True)
        log.info("nats_reconnected", service=service, url=at)
        bus.restore_soon()

    async def on_closed(bus: EventBus) -> None:
        if not bus.closing:
            metrics.nats_connection(service, False)
            log.error("nats_closed", service=service, url=shown)

    try:
        async with asyncio.timeout(NATS_CONNECT_TIMEOUT):
            bus = await EventBus.connect(
                url,
                name=service,
                error_cb=on_error,
                on_disconnected=on_disconnected,
                on_reconnected=on_reconnected,
                on_closed=on_closed,
                ping_interval=PING_INTERVAL,
                max_outstanding_pings=MAX_OUTSTANDING_PINGS,
                **connect_options(settings, service),
            )
    except (TimeoutError, nats.errors.Error, OSError) as exc:
        raise OSError(f"cannot reach NATS at {shown} ({exc or type(exc).__name__})") from None
    metrics.nats_connection(service, True)
    bus.atomic_decisions = settings.atomic_decisions
    await bus.ensure_stream(
        replicas=settings.stream_replicas,
        max_age=settings.stream_max_age,
        max_bytes=settings.stream_max_bytes,
    )
    return bus


def producer_name(service: str) -> str:
    """``EventEnvelope.producer``: the service and this instance of it."""
    return f"{service}@{socket.gethostname()}:{os.getpid()}"


def factory_for(name: str) -> Factory:
    """``services.<name>.app.build``; ``ValueError`` for a service that does not exist."""
    if name not in SERVICE_PORTS:
        raise ValueError(f"unknown service {name!r}; known: {', '.join(SERVICE_PORTS)}")
    module = importlib.import_module(f"services.{name}.app")
    build: Factory = module.build
    return build


@dataclass
class RunningService:
    """A service started in this process; ``port`` is the bound gRPC port, ``metrics``
    its metrics server (``metrics.address``: where to scrape it)."""

    name: str
    service: Service
    server: RunningServer
    metrics: MetricsServer | None = None

    @property
    def port(self) -> int:
        return self.server.port

    async def stop(self, grace: float = 1.0) -> None:
        try:
            await self.server.stop(grace)
        finally:
            await self.service.close()
            if self.metrics is not None:
                self.metrics.stop_soon()


async def start_service(
    name: str, settings: Settings, *, port: int | None = None, **overrides: Any
) -> RunningService:
    """Build, start and serve ``name`` in this process (``port=0``: any free port, for
    its metrics too).

    ``overrides`` go to the service's ``build`` (e.g. a channel to a dealer started
    on a random port). The service calls the others as itself (``as_identity``), as
    its own process would: several services in one process each keep their name."""
    settings = settings.as_identity(name)
    service = await factory_for(name)(settings, **overrides)
    await service.start()
    try:
        server = await start_server(
            name, service.add_to_server, service.full_names, settings.calling, port,
            checks_of(service), roles_of(service),
        )  # fmt: skip
    except BaseException:
        await service.close()
        raise
    at = (
        settings.network.listen_address(name, 0)
        if port == 0
        else settings.network.metrics_address(name)
    )
    try:
        exposition = serve_metrics(name, at)
    except BaseException:
        await RunningService(name, service, server).stop()
        raise
    return RunningService(name, service, server, exposition)


START_ORDER = (
    "dealer", "recorder", "settlement", "rules", "bot", "table", "console", "play",
)  # fmt: skip
"""Every service after the ones it calls (rules -> dealer, bot -> rules, table -> all,
play -> table)."""


async def start_services(
    names: Sequence[str], settings: Settings
) -> tuple[dict[str, RunningService], Settings]:
    """Start ``names`` in this process on free loopback ports, each after those it
    calls, each dialling the others where they were bound. Returns them by name and
    the settings that point at them."""
    running: dict[str, RunningService] = {}
    try:
        for name in sorted(names, key=START_ORDER.index):
            running[name] = await start_service(name, settings, port=0)
            host = settings.network.listen_address(name).rsplit(":", 1)[0]
            host = "127.0.0.1" if host in WILDCARD_HOSTS else host
            settings = settings.with_addresses(**{name: f"{host}:{running[name].port}"})
    except BaseException:
        for service in reversed(running.values()):
            await service.stop()
        raise
    return running, settings


async def run_service(
    name: str, settings: Settings, *, stop: asyncio.Event | None = None, **overrides: Any
) -> None:
    """Run ``name`` until SIGTERM/SIGINT (or ``stop``), then shut down gracefully:
    stop taking calls, let calls in flight finish, then stop consumers."""
    settings = settings.as_identity(name)
    service = await factory_for(name)(settings, **overrides)
    await service.start()
    settle_collector()
    try:
        exposition = serve_metrics(name, settings.network.metrics_address(name))
        try:
            await serve(
                name, service.add_to_server, service.full_names, settings.calling,
                stop=stop, checks=checks_of(service), roles=roles_of(service),
            )  # fmt: skip
        finally:
            exposition.stop()
    finally:
        await service.close()


def named(name: str, exc: BaseException) -> str:
    """``exc`` as a line that names the service once (many errors name it already)."""
    text = str(exc) or type(exc).__name__
    return text if text.startswith(f"{name}: ") else f"{name}: {text}"


def main(name: str) -> int:
    """The whole of a service process: settings, logging, serve. Exit code 2 on bad
    configuration (one line on stderr), 1 when a dependency cannot be reached."""
    try:
        settings = Settings.from_env()
        factory_for(name)
    except ValueError as exc:
        print(f"ddz: error: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.telemetry, service=name)
    configure_tracing(settings.telemetry, service=name)
    try:
        return _run(name, settings)
    finally:
        shutdown_tracing()  # what is still queued is exported before the process ends


def _run(name: str, settings: Settings) -> int:
    build = engine_build()
    if build.stale:
        log.warning("stale_rules_engine", detail=build.describe())
    else:
        log.info("rules_engine", build=build.describe())
    try:
        asyncio.run(run_service(name, settings))
    except KeyboardInterrupt:
        return 130
    except (OSError, TimeoutError, nats.errors.Error) as exc:
        bad = file_error(exc) if isinstance(exc, OSError) else None
        if bad is not None:  # a file of its own it cannot use: bad configuration
            return _refuse(name, bad)
        log.error("cannot_start", service=name, error=str(exc) or type(exc).__name__)
        print(f"ddz: error: {named(name, exc)}", file=sys.stderr)
        return 1
    except ValueError as exc:  # configuration read while building (e.g. the rooms file)
        return _refuse(name, exc)
    return 0


def _refuse(name: str, exc: ValueError) -> int:
    """Exit code 2 with one line (``ddz up`` shows that line as its own)."""
    log.error("bad_configuration", service=name, error=str(exc))
    print(f"ddz: error: {named(name, exc)}", file=sys.stderr)
    return 2
