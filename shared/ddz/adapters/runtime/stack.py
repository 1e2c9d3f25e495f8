"""The whole suite on one machine: a NATS server and the six services as child processes.

    with Stack(Settings.from_env()) as stack:      # ``ddz up``, simulate, bench, e2e tests
        channel = make_channel(stack.settings, "table")

``start()`` starts ``nats-server`` with JetStream under the data directory (unless
``DDZ_NATS_URL`` names a server; on a random port when 4222 is taken), migrates the
store and the services' tables once, makes what is missing of the token keys and of
the local CA and certificates (``ddz.adapters.security.certs``), starts every service as ``python -m
services.<name>`` with the environment rebuilt from the one ``Settings`` object, and
returns when every service's health check answers SERVING. Each service logs (JSON
lines, and anything it prints) to ``<data dir>/logs/<name>.log``.

``scale`` starts several instances of a service (``ddz up --scale rules=3``): the
first is named after the service and has its port, the others ``rules-2``, ``rules-3``
... on free ports; every client is given all of them (``DDZ_RULES_ADDR`` a comma list).
``nats_cluster=3`` starts a JetStream cluster of three nodes (``nats-1`` ... on loopback
routes) instead of one server, with every stream replicated three times. Once ready, the
stack writes where everything is to ``<data dir>/stack.json`` (``stack_file``), where the
tools find it; ``stop()`` removes it.

Before anything starts (``claim``), the stack takes the data dir's lock
(``suite_lock``: one suite per data dir) and checks that every port its settings name is
free; either refusal is a ``SetupRefused`` of one line. Each start moves the last run's
logs to ``logs/previous/``; a restart (``restart``) rewrites ``stack.json``.

``stop()`` sends SIGTERM to every service and waits (SIGKILL after ``grace`` seconds),
then stops NATS: children first, so they can finish and ack what is in flight. Every
child runs in its own session, so a terminal's Ctrl-C reaches only the supervisor,
which then stops everything in that order.

A ``Supervisor`` keeps a started stack running, as ``restart: unless-stopped`` does:
a child that exits (NATS included) is started again at the same address, after a
delay that doubles while it keeps failing; only a crash loop (``RestartPolicy``) gives
up. The stack knows how to restart a child (``restart``); the supervisor decides when.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Protocol

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ddz.adapters.files.data_files import ensure_dir
from ddz.adapters.messaging import nats_auth
from ddz.adapters.rpc.grpc_client import channel_credentials, channel_target, list_tls_options
from ddz.adapters.runtime import stack_file
from ddz.adapters.runtime.nats_server import (
    NatsCluster,
    NatsServer,
    NatsServerError,
    free_port,
    listenable,
    reserve,
    start_nats_cluster,
    start_nats_server,
)
from ddz.adapters.runtime.suite_lock import SuiteLock, SuiteRunning, new_run_logs
from ddz.adapters.security.certs import TlsSetupError, ensure_certificates, suite_hosts
from ddz.adapters.security.token_keys import ensure_keys
from ddz.config import SERVICE_PORTS, WILDCARD_HOSTS, Settings

SERVICES: tuple[str, ...] = (
    "recorder", "settlement", "dealer", "rules", "bot", "table", "console",
)  # fmt: skip
"""Every service of the suite, in start order (consumers of events before producers; the
console, which reads the recorder and settlement, last)."""

SERVING = health_pb2.HealthCheckResponse.SERVING

NATS = "nats"
"""The name of the stack's own nats-server among its children (a cluster's nodes are
``nats-1``, ``nats-2`` ...)."""

CLUSTER_DIR = "nats-cluster"
"""Where a local cluster's nodes keep their stores and configuration, under the data dir
(apart from the single server's store: the two never share a stream)."""

SCALED_BOT_PARTITIONS = 16
"""Partitions the bot's instances share when the stack starts several and no
``DDZ_BOT_PARTITIONS`` says how many (one partition cannot be shared)."""


class StackError(RuntimeError):
    """A part of the stack did not start (the message names it and its log)."""


class ServiceRefused(ValueError):
    """A service exited at start refusing a file or setting, and said why in one line
    (exit code 2): that line, for the command to print as its own."""


REFUSAL = "ddz: error: "
"""How a service's one-line refusal begins (``service_runner.main``)."""


class SetupRefused(StackError):
    """The stack cannot start as set up (another suite holds the data dir, a port it
    must listen on is taken): refused before anything starts; the message is one line
    naming what to change."""


class Stop(Protocol):
    """A request to stop that the stack and the supervisor look at (a
    ``threading.Event`` is one; so is ``SignalStop``)."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float) -> bool: ...


class SignalStop:
    """A stop that a signal handler sets. ``threading.Event.set`` takes the event's lock,
    which the main thread the signal interrupted may be holding inside ``wait``: the
    handler would wait for it forever. Setting this takes no lock."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        """Sleep ``timeout`` seconds, or less once set; True when set."""
        deadline = time.monotonic() + timeout
        while not self._set and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))
        return self._set


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
        "DDZ_DATABASE_URL": settings.database_url,
        "DDZ_HOST": settings.host,
        "DDZ_LOG_LEVEL": settings.log_level,
        "DDZ_LOG_FORMAT": settings.log_format,
        "DDZ_LOG_TO_FILE": "true" if settings.log_to_file else "false",
        "DDZ_AUDIT_KEY_ID": settings.audit_key_id,
        "DDZ_RPC_TIMEOUT": repr(settings.rpc_timeout),
        "DDZ_TURN_TIMEOUT": repr(settings.turn_timeout),
        "DDZ_TIMEOUTS_TO_AUTOPLAY": str(settings.timeouts_to_autoplay),
        "DDZ_AUTOPLAY_TURN_TIMEOUT": repr(settings.autoplay_turn_timeout),
        "DDZ_RECONNECT_GRACE": repr(settings.reconnect_grace),
        "DDZ_STALL_MARGIN": repr(settings.stall_margin),
        "DDZ_MAX_MESSAGE_BYTES": str(settings.max_message_bytes),
        "DDZ_BOT_PLAYER": settings.bot_player,
        "DDZ_BOT_MAX_MS": repr(settings.bot_max_ms),
        "DDZ_ATOMIC_DECISIONS": "1" if settings.atomic_decisions else "0",
        "DDZ_RESTART_LIMIT": str(settings.restart_limit),
        "DDZ_RESTART_WINDOW": repr(settings.restart_window),
        "DDZ_STREAM_REPLICAS": str(settings.stream_replicas),
        "DDZ_STREAM_MAX_AGE": repr(settings.stream_max_age or 0),
        "DDZ_STREAM_MAX_BYTES": str(settings.stream_max_bytes or 0),
        "DDZ_INSECURE": "1" if settings.insecure else "0",
        "DDZ_MAX_CONCURRENT_RPCS": str(settings.max_concurrent_rpcs),
        "DDZ_SEAT_TOKEN_TTL": repr(settings.seat_token_ttl),
        "DDZ_JOIN_RATE": repr(settings.join_rate),
        "DDZ_JOIN_BURST": str(settings.join_burst),
        "DDZ_MOVE_RATE": repr(settings.move_rate),
        "DDZ_MOVE_BURST": str(settings.move_burst),
        "DDZ_SEAT_STREAMS": str(settings.seat_streams),
        "DDZ_LEASE_TTL": repr(settings.lease_ttl),
        "DDZ_BOT_PARTITIONS": str(settings.bot_partitions),
        "DDZ_CONSOLE_WEB_PORT": str(settings.console_web_port),
        "DDZ_CONSOLE_SESSION_TTL": repr(settings.console_session_ttl),
    }
    if settings.nats_url:
        env["DDZ_NATS_URL"] = settings.nats_url
    if settings.nats_sync:
        env["DDZ_NATS_SYNC"] = settings.nats_sync
    if settings.table_advertise:
        env["DDZ_TABLE_ADVERTISE"] = settings.table_advertise
    for variable, path in (
        ("DDZ_NATS_CREDS", settings.nats_creds_file),
        ("DDZ_NATS_NKEY_SEED", settings.nats_nkey_seed_file),
        ("DDZ_NATS_CA", settings.nats_ca_file),
        ("DDZ_NATS_CERT", settings.nats_cert_file),
        ("DDZ_NATS_KEY", settings.nats_key_file),
        ("DDZ_TLS_CA", settings.tls_ca_file),
        ("DDZ_TLS_CERT", settings.tls_cert_file),
        ("DDZ_TLS_KEY", settings.tls_key_file),
        ("DDZ_EVENT_KEYRING", settings.event_keyring_file),
        # Not DDZ_EVENT_SIGNING_KEY: it is one producer's own key, never the whole stack's.
    ):
        if path is not None:
            env[variable] = str(path)
    if settings.nats_user:
        env["DDZ_NATS_USER"] = settings.nats_user
        env["DDZ_NATS_PASSWORD"] = settings.nats_password
    if settings.audit_key:
        env["DDZ_AUDIT_KEY"] = settings.audit_key.decode("utf-8")
    if settings.rooms_file is not None:
        env["DDZ_ROOMS_FILE"] = str(settings.rooms_file)
    if settings.audit_signing_key_file is not None:
        env["DDZ_AUDIT_SIGNING_KEY"] = str(settings.audit_signing_key_file)
    if settings.audit_public_keys_file is not None:
        env["DDZ_AUDIT_PUBLIC_KEYS"] = str(settings.audit_public_keys_file)
    if settings.table_token_key:
        env["DDZ_TABLE_TOKEN_KEY"] = settings.table_token_key.decode("utf-8")
    if settings.login_key_file is not None:
        env["DDZ_LOGIN_KEY"] = str(settings.login_key_file)
    if settings.login_jwks_file is not None:
        env["DDZ_LOGIN_JWKS"] = str(settings.login_jwks_file)
    for service, port in settings.ports.items():
        env[f"DDZ_{service.upper()}_PORT"] = str(port)
    for service, target in settings.addresses.items():
        env[f"DDZ_{service.upper()}_ADDR"] = target
    for service, listen in settings.listen.items():
        env[f"DDZ_{service.upper()}_LISTEN"] = listen
    for service, port in settings.metrics_ports.items():
        env[f"DDZ_{service.upper()}_METRICS_PORT"] = str(port)
    for service, port in settings.probe_ports.items():
        env[f"DDZ_{service.upper()}_PROBE_PORT"] = str(port)
    return env


def named_ports(settings: Settings, service: str) -> list[int]:
    """The ports ``settings`` give ``service``: gRPC, metrics, and a probe port if any."""
    ports = [settings.port(service), settings.metrics_port(service)]
    if service == "console":  # and its pages
        ports.append(settings.console_web_port)
    return [*ports, settings.probe_ports.get(service, 0)]


def with_free_ports(settings: Settings, services: Iterable[str] = SERVICE_PORTS) -> Settings:
    """``settings`` with a free gRPC port and a free metrics port for each of ``services``
    (the metrics port named too: the gRPC port + the offset may be taken)."""
    host = settings.host
    names = list(services)
    ports = {**settings.ports, **{name: free_port(host) for name in names}}
    metrics = {**settings.metrics_ports, **{name: free_port(host) for name in names}}
    web = free_port(host) if "console" in names else settings.console_web_port
    return dataclasses.replace(
        settings, ports=MappingProxyType(ports), metrics_ports=MappingProxyType(metrics),
        console_web_port=web,
    )  # fmt: skip


def blocking_channel(address: str, settings: Settings) -> grpc.Channel:
    """A synchronous channel to ``address`` (health checks, scripts): TLS with this
    process's certificate as ``grpc_client.channel_credentials`` says. A service's
    instances (a comma list, ``--scale``) are one target: the first that answers, its
    certificate checked for the first one's host (a list is no host name)."""
    credentials = channel_credentials(settings)
    target = channel_target(address)
    if credentials is None:
        return grpc.insecure_channel(target)
    return grpc.secure_channel(target, credentials, options=list_tls_options(address))


def health_status(
    address: str, timeout: float = 1.0, service: str = "", *, settings: Settings | None = None
) -> int | None:
    """The health status at ``address`` (``SERVING`` = 1), or None if nothing answers;
    asked over TLS as ``settings`` say (default: ``Settings.from_env()``), with this
    process's certificate: the internal services let no one in without one."""
    settings = Settings.from_env() if settings is None else settings
    try:
        channel = blocking_channel(address, settings)
    except TlsSetupError:
        return None  # no certificate to ask with: nothing of ours can be running here
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError:
            return None
    status: int = reply.status
    return status


def stack_answers(settings: Settings, service: str = "table", timeout: float = 1.0) -> bool:
    """True when ``service`` at its configured address reports SERVING."""
    return bool(health_status(settings.address(service), timeout, settings=settings) == SERVING)


@dataclass
class ServiceProcess:
    name: str  # the instance: ``rules``, ``rules-2`` ... (``nats``, ``nats-1`` ...)
    process: subprocess.Popen[bytes]
    address: str
    log_file: Path
    service: str = ""  # the service it is an instance of ("" for NATS)

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 1500) -> str:
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return text[-chars:].strip()

    def refusal(self) -> str:
        """What it said was wrong when it exited with code 2, refusing its configuration
        (its last ``ddz: error: ...`` line, without that prefix), else ""."""
        if self.process.returncode != 2:
            return ""
        said = [line for line in self.log_tail().splitlines() if line.startswith(REFUSAL)]
        return said[-1].removeprefix(REFUSAL).strip() if said else ""

    def log_lines(self, count: int = 20) -> str:
        """The last ``count`` lines of the log (the file holds every run of the child)."""
        return "\n".join(self.log_tail(chars=400 * count).splitlines()[-count:])


class Stack:
    """NATS plus the services as child processes; a context manager.

    ``ephemeral_ports=True`` gives every service a free port (tests, a second stack
    next to a running one); otherwise the configured ``DDZ_<SERVICE>_PORT`` are used.
    ``nats_port``: None = 4222 if free else random; 0 = random. ``scale``: instances per
    service (default one each); ``nats_cluster``: nodes of a local JetStream cluster
    (0 or 1: one server).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        services: Sequence[str] = SERVICES,
        ephemeral_ports: bool = False,
        nats_port: int | None = None,
        ready_timeout: float = 60.0,
        grace: float = 10.0,
        extra_env: Mapping[str, str] | None = None,
        profile_dir: Path | None = None,
        scale: Mapping[str, int] | None = None,
        nats_cluster: int = 0,
    ) -> None:
        unknown = (set(services) | set(scale or {})) - set(SERVICE_PORTS)
        if unknown:
            raise ValueError(f"unknown services: {', '.join(sorted(unknown))}")
        if any(count < 1 for count in (scale or {}).values()):
            raise ValueError("a service runs at least one instance")
        if nats_cluster < 0:
            raise ValueError(f"a NATS cluster has at least one node, got {nats_cluster}")
        if nats_cluster > 1 and settings.nats_url:
            raise ValueError("DDZ_NATS_URL names a NATS server: the stack starts no cluster")
        self.settings = settings
        self.services = tuple(services)
        self.ephemeral_ports = ephemeral_ports
        self.nats_port = nats_port
        self.ready_timeout = ready_timeout
        self.grace = grace
        self.extra_env = dict(extra_env or {})
        self.scale = {name: (scale or {}).get(name, 1) for name in self.services}
        self.nats_cluster = nats_cluster if nats_cluster > 1 else 0
        self._nats_config: Path | None = None  # our nats-server's users (nats_auth)
        self._service_env: dict[str, dict[str, str]] = {}
        self._instance_env: dict[str, dict[str, str]] = {}  # instance -> its own ports
        self.profile_dir = profile_dir  # cProfile each service into <dir>/<name>.prof
        self.nats: NatsServer | None = None
        self.cluster: NatsCluster | None = None
        self.processes: dict[str, ServiceProcess] = {}
        self.restarts: dict[str, int] = {}  # child name -> times restarted (stack.json)
        self._env: dict[str, str] = {}
        self._stopping = False
        self._lock = SuiteLock(settings.data_dir)
        self._published = False  # stack.json written: rewritten on every restart

    def instances(self, service: str) -> list[ServiceProcess]:
        """The running instances of ``service`` (the first one first)."""
        return [child for child in self.processes.values() if child.service == service]

    def metrics_address(self, child: ServiceProcess) -> str:
        """Where the instance ``child`` serves its Prometheus metrics (dialled on
        loopback when it listens on a wildcard host)."""
        service = child.service
        port = self._instance_env.get(child.name, {}).get(f"DDZ_{service.upper()}_METRICS_PORT")
        address = self.settings.metrics_address(service)
        host = address.rsplit(":", 1)[0]
        if host in WILDCARD_HOSTS:
            host = "127.0.0.1"
        return f"{host}:{port or address.rsplit(':', 1)[1]}"

    # -- lifecycle -------------------------------------------------------------------

    def start(self, cancel: Stop | None = None) -> Stack:
        """Start everything and wait until it answers; ``cancel`` set meanwhile (Ctrl-C)
        stops what was started and raises ``StackError``."""
        self._stopping = False
        try:
            self._start(cancel or threading.Event())
        except BaseException:
            self.stop()
            raise
        return self

    def claim(self) -> None:
        """Take the data dir (its lock, held until ``stop``) and check the ports the
        settings name, or raise ``SetupRefused`` with one line saying what to change;
        nothing has started either way. ``start`` claims first when not yet done."""
        settings = self.settings
        try:
            self._lock.acquire("" if self.ephemeral_ports else settings.address("table"))
        except SuiteRunning as exc:
            raise SetupRefused(str(exc)) from None
        except OSError as exc:  # not a directory, not writable: nothing can start there
            raise SetupRefused(
                f"cannot use the data dir {settings.data_dir}: {exc.strerror or exc} "
                f"({exc.filename or self._lock.path}); set DDZ_DATA_DIR to a directory "
                "this user can write"
            ) from None
        try:
            self._check_ports(settings)
        except SetupRefused:
            self._lock.release()
            raise

    def _start(self, cancel: Stop) -> None:
        settings = self.settings
        if not self._lock.held:
            self.claim()
        ensure_dir(settings.log_dir, "directory of the logs")
        new_run_logs(settings.log_dir)
        # The ports the settings name are bound only by the children: never picked here
        # for NATS or another instance meanwhile.
        reserve(port for service in self.services for port in named_ports(settings, service))
        if not settings.nats_url:
            settings = self._start_nats(settings)
        if self.ephemeral_ports:
            settings = with_free_ports(settings, self.services)
        settings = self._place_instances(dataclasses.replace(settings, log_to_file=True))
        self.settings = settings
        migrate(settings)
        ensure_keys(settings)  # a fresh machine: every token key made before a service reads it
        if not settings.insecure:
            # The CA and every identity's certificate, naming the hosts it runs on.
            ensure_certificates(settings.data_dir, hosts=suite_hosts(settings))
        self._env = self.child_env()
        for service in self.services:
            for name in self._instance_names(service):
                self.processes[name] = self._spawn(name, self._env)
        self._wait_ready(cancel)
        stack_file.write(self)
        self._published = True
        self._lock.update(self.settings.address("table"))

    def _check_ports(self, settings: Settings) -> None:
        """Refuse to start when a port the settings name is taken: one line naming it and
        the setting that moves it, before any child starts (a service that cannot bind
        would exit, and health checks would knock at whatever listens there instead)."""
        wanted: list[tuple[str, int, str, str]] = []  # (host, port, what, what to do)
        if not settings.nats_url and not self.nats_cluster and self.nats_port:
            move = "give --nats-port another port (0: any free one)"
            wanted.append((settings.host, self.nats_port, "NATS", move))
        for service in self.services:
            name = f"DDZ_{service.upper()}"
            host = settings.listen_address(service).rsplit(":", 1)[0]
            if not self.ephemeral_ports:
                setting = f"{name}_LISTEN" if service in settings.listen else f"{name}_PORT"
                wanted.append((host, settings.port(service), f"{service} gRPC", setting))
                metrics = settings.metrics_port(service)
                wanted.append((host, metrics, f"{service} metrics", f"{name}_METRICS_PORT"))
            probe = settings.probe_ports.get(service, 0)
            wanted.append((host, probe, f"{service} probe", f"{name}_PROBE_PORT"))
        for host, port, what, move in wanted:
            if port and not listenable(host, port):
                if move.startswith("DDZ_"):
                    move = f"set {move} to a free port"
                raise SetupRefused(
                    f"port {port} ({what}) is in use on {host}: another program or suite "
                    f"listens there; {move}, or stop what listens there"
                )

    def _start_nats(self, settings: Settings) -> Settings:
        """Our own server or cluster: one user per service (nats_auth), the stream made by
        the provisioning user before any service, which may not make it."""
        self._nats_config = nats_auth.write_config(
            settings.data_dir, sync_interval=settings.nats_sync
        )
        if self.nats_cluster:
            self.cluster = start_nats_cluster(
                settings.data_dir / CLUSTER_DIR, self.nats_cluster, host=settings.host,
                include=self._nats_config, log_dir=settings.log_dir,
            )  # fmt: skip
            url = self.cluster.url
            # A stream on three nodes is kept by each; one on fewer would lose the
            # point of the cluster (an operator's higher setting is kept).
            replicas = max(settings.stream_replicas, min(3, self.nats_cluster))
            settings = dataclasses.replace(settings, stream_replicas=replicas)
        else:
            self.nats = start_nats_server(
                settings.nats_store_dir,
                log_file=settings.log_dir / "nats-server.log",
                host=settings.host,
                port=self.nats_port,
                config_file=self._nats_config,
            )
            url = self.nats.url
        settings = dataclasses.replace(settings, nats_url=url)
        asyncio.run(nats_auth.provision_stream(settings))
        self._service_env = {
            name: nats_auth.service_env(settings.data_dir, name) for name in self.services
        }
        return settings

    def _instance_names(self, service: str) -> list[str]:
        count = self.scale.get(service, 1)
        return [service if n == 1 else f"{service}-{n}" for n in range(1, count + 1)]

    def _place_instances(self, settings: Settings) -> Settings:
        """Give every instance after a service's first its own free ports, and every
        client every instance: ``DDZ_<NAME>_ADDR`` lists them all."""
        addresses: dict[str, str] = {}
        for service in self.services:
            names = self._instance_names(service)
            if len(names) == 1:
                continue
            first = settings.address(service)
            dial_host = first.rsplit(":", 1)[0]
            targets = [first]
            for name in names[1:]:
                port = free_port(settings.host)
                own = {
                    # Its log lines go to stderr, which is its own log file (not the
                    # first instance's <service>.log).
                    "DDZ_LOG_TO_FILE": "false",
                    f"DDZ_{service.upper()}_PORT": str(port),
                    f"DDZ_{service.upper()}_METRICS_PORT": str(free_port(settings.host)),
                }
                if service in settings.listen:
                    own[f"DDZ_{service.upper()}_LISTEN"] = settings.listen_address(service, port)
                if service in settings.probe_ports:
                    own[f"DDZ_{service.upper()}_PROBE_PORT"] = str(free_port(settings.host))
                if service == "console":  # its pages too
                    own["DDZ_CONSOLE_WEB_PORT"] = str(free_port(settings.host))
                self._instance_env[name] = own
                targets.append(f"{dial_host}:{port}")
            addresses[service] = ",".join(targets)
        if self.scale.get("bot", 1) > 1 and settings.bot_partitions == 1:
            settings = dataclasses.replace(settings, bot_partitions=SCALED_BOT_PARTITIONS)
        return settings.with_addresses(**addresses) if addresses else settings

    def child_env(self) -> dict[str, str]:
        """The environment of every child: ours without ``DDZ_*``, then the settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
        env.update(settings_env(self.settings))
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.extra_env)
        return env

    def _spawn(self, name: str, env: Mapping[str, str]) -> ServiceProcess:
        service = name.rsplit("-", 1)[0] if name not in SERVICE_PORTS else name
        log_file = self.settings.log_dir / f"{name}.log"
        # Its own NATS user (one per service), and its own ports (one per instance).
        env = {**env, **self._service_env.get(service, {}), **self._instance_env.get(name, {})}
        env = traced_as(env, service, name)
        command = [sys.executable, "-m", f"services.{service}"]
        if self.profile_dir is not None:
            self.profile_dir.mkdir(parents=True, exist_ok=True)
            profile = str(self.profile_dir / f"{name}.prof")
            command[1:1] = ["-m", "cProfile", "-o", profile]
        with log_file.open("ab") as out:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                start_new_session=True,  # Ctrl-C goes to the supervisor only (see stop)
            )
        port = self._instance_env.get(name, {}).get(f"DDZ_{service.upper()}_PORT")
        address = self.settings.address(service).split(",")[0]
        if port is not None:
            address = f"{address.rsplit(':', 1)[0]}:{port}"
        return ServiceProcess(name, process, address, log_file, service)

    def _wait_ready(self, cancel: Stop) -> None:
        deadline = time.monotonic() + self.ready_timeout
        waiting = dict(self.processes)
        while waiting:
            if cancel.is_set():
                raise StackError("interrupted while starting")
            for name, child in list(waiting.items()):
                if not child.running():
                    refusal = child.refusal()
                    if refusal:  # its own one line (a file or a setting): that line alone
                        raise ServiceRefused(f"{refusal} (log: {child.log_file})")
                    raise StackError(
                        f"service {name} exited with code {child.process.returncode} "
                        f"(log: {child.log_file}):\n{child.log_tail()}"
                    )
                if health_status(child.address, timeout=0.5, settings=self.settings) == SERVING:
                    del waiting[name]
            if waiting and time.monotonic() > deadline:
                names = ", ".join(sorted(waiting))
                raise StackError(
                    f"not SERVING after {self.ready_timeout:g}s: {names} "
                    f"(logs in {self.settings.log_dir})"
                )
            if waiting:
                time.sleep(0.05)

    def failed(self) -> list[ServiceProcess]:
        """Services whose process has exited."""
        return [child for child in self.processes.values() if not child.running()]

    def children(self) -> list[ServiceProcess]:
        """What a supervisor watches: NATS first (when this stack started it), then the
        services in start order."""
        found = list(self.processes.values())
        if self.nats is not None:
            nats = self.nats
            found.insert(0, ServiceProcess(NATS, nats.process, nats.url, nats.log_file))
        if self.cluster is not None:
            nodes = [
                ServiceProcess(f"{NATS}-{n}", node.process, node.url, node.log_file)
                for n, node in enumerate(self.cluster.nodes, start=1)
            ]
            found[:0] = nodes
        return found

    def restart(self, name: str) -> ServiceProcess:
        """Start the child ``name`` (a service, or ``NATS``) again where it was: the same
        environment and port, NATS on its port and store dir. Returns it as now running
        (a service may not answer yet). Refused once ``stop`` has begun."""
        if self._stopping:
            raise StackError(f"the stack is stopping: {name} is not restarted")
        child = self._restart(name)
        self.restarts[name] = self.restarts.get(name, 0) + 1
        stack_file.write(self)  # its new pid, for the tools and ddz status
        return child

    def _restart(self, name: str) -> ServiceProcess:
        if name.startswith(f"{NATS}-") and self.cluster is not None:
            index = int(name.rsplit("-", 1)[1]) - 1
            self.cluster.restart(index)
            return self._published_again(
                next(child for child in self.children() if child.name == name)
            )
        if name == NATS:
            if self.nats is None:
                raise StackError("this stack did not start NATS: it cannot restart it")
            old = self.nats
            with contextlib.suppress(ProcessLookupError):
                old.process.kill()  # if it hangs rather than exited: it must free the port
            old.process.wait()
            self.nats = start_nats_server(
                old.store_dir, log_file=old.log_file, host=old.host, port=old.port,
                config_file=self._nats_config,
            )  # fmt: skip
            return self._published_again(self.children()[0])
        old_child = self.processes[name]
        if old_child.running():
            old_child.process.kill()
            old_child.process.wait()
        self.processes[name] = child = self._spawn(name, self._env)
        return self._published_again(child)

    def _published_again(self, child: ServiceProcess) -> ServiceProcess:
        """``child`` after a restart, with ``stack.json`` saying its new pid."""
        if self._published:
            stack_file.write(self)
        return child

    def stop(self) -> None:
        """SIGTERM every service, wait up to ``grace`` s (then SIGKILL), then stop NATS."""
        self._stopping = True
        children = list(self.processes.values())
        for child in children:
            if child.running():
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for child in children:
            try:
                child.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()
        if self.nats is not None:
            self.nats.stop()
        if self.cluster is not None:
            self.cluster.stop()
        stack_file.remove(self.settings.data_dir)
        self._published = False
        self._lock.release()

    def pids(self) -> list[int]:
        """Every child's process id (services, then NATS when we started it)."""
        pids = [child.process.pid for child in self.processes.values()]
        if self.nats is not None:
            pids.append(self.nats.process.pid)
        if self.cluster is not None:
            pids += [node.process.pid for node in self.cluster.nodes]
        return pids

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """When a supervisor restarts an exited child, and when it gives up.

    The n-th restart in a row waits ``first_delay * 2**n`` seconds, at most ``max_delay``;
    a child that stayed up ``stable_after`` seconds starts again from ``first_delay``.
    More than ``limit`` restarts of one child within ``window`` seconds is a crash loop
    (``limit=0``: the first exit is one). ``DDZ_RESTART_LIMIT`` and
    ``DDZ_RESTART_WINDOW`` set the two that an operator may want to tune.
    """

    limit: int = 5
    window: float = 60.0
    first_delay: float = 0.2
    max_delay: float = 5.0
    stable_after: float = 10.0

    @classmethod
    def from_settings(cls, settings: Settings) -> RestartPolicy:
        return cls(limit=settings.restart_limit, window=settings.restart_window)

    def delay(self, streak: int) -> float:
        """Seconds to wait before the restart that follows ``streak`` quick ones."""
        return float(min(self.max_delay, self.first_delay * 2 ** min(streak, 32)))


class CrashLoop(StackError):
    """A child exited more often than the restart policy allows (the message names it,
    how it exited, and ends with the tail of its log)."""

    def __init__(self, child: ServiceProcess, exits: int, policy: RestartPolicy) -> None:
        self.name = child.name
        self.log_file = child.log_file
        super().__init__(
            f"{child.name} is crash looping: it {exit_reason(child.process.returncode)}, "
            f"{exits} exits within {policy.window:g}s (DDZ_RESTART_LIMIT allows "
            f"{policy.limit} restarts); stopping the stack.\n"
            f"last lines of {child.log_file}:\n{child.log_lines()}"
        )


def exit_reason(returncode: int | None) -> str:
    """How a child ended: ``exited with code 2``, ``was killed by SIGKILL``."""
    if returncode is None:
        return "is running"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


@dataclass
class _Watch:
    """What the supervisor remembers of one child between looks."""

    started: float  # when its current process started (monotonic seconds)
    streak: int = 0  # restarts in a row that did not stay up stable_after
    restarts: deque[float] = field(default_factory=deque)  # when, within the window
    due: float | None = None  # when an exited child is restarted


class Supervisor:
    """Keeps a started ``Stack`` running: an exited child is restarted at the same address
    after a growing delay (``RestartPolicy``), and ``report`` gets one line per restart.
    ``watch(stop)`` looks every ``poll`` seconds until ``stop`` is set; it raises
    ``CrashLoop`` when a child keeps exiting. It runs in the thread that will call
    ``stack.stop()`` afterwards, so nothing is restarted once stopping has begun.
    """

    def __init__(
        self,
        stack: Stack,
        policy: RestartPolicy | None = None,
        *,
        report: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stack = stack
        self.policy = policy or RestartPolicy.from_settings(stack.settings)
        self.report = report
        self.clock = clock
        now = clock()
        self._watches = {child.name: _Watch(started=now) for child in stack.children()}

    def watch(self, stop: Stop, poll: float = 0.2) -> None:
        """Supervise until ``stop`` is set (then return at once, restarting nothing)."""
        while not stop.wait(poll):
            self.step(stop.is_set)

    def step(self, stopping: Callable[[], bool] = lambda: False) -> None:
        """One look at every child (NATS first, so services come back to a bus)."""
        for child in self.stack.children():
            if stopping():
                return
            now = self.clock()
            watch = self._watches.setdefault(child.name, _Watch(started=now))
            if child.running():
                if watch.streak and now - watch.started >= self.policy.stable_after:
                    watch.streak = 0
                continue
            if watch.due is None:
                self._exited(child, watch, now)
            if watch.due is not None and now >= watch.due:
                self._restart(child, watch, now)

    def _exited(self, child: ServiceProcess, watch: _Watch, now: float) -> None:
        while watch.restarts and now - watch.restarts[0] > self.policy.window:
            watch.restarts.popleft()
        if len(watch.restarts) >= self.policy.limit:
            raise CrashLoop(child, len(watch.restarts) + 1, self.policy)
        if now - watch.started >= self.policy.stable_after:
            watch.streak = 0
        watch.due = now + self.policy.delay(watch.streak)

    def _restart(self, child: ServiceProcess, watch: _Watch, now: float) -> None:
        reason = exit_reason(child.process.returncode)
        watch.restarts.append(now)
        watch.streak += 1
        watch.started = now
        watch.due = None
        try:
            new = self.stack.restart(child.name)
        except (StackError, NatsServerError) as exc:
            # Counted as a restart that exited at once: the next look tries again later.
            self.report(f"ddz: {child.name} {reason}; restarting it failed: {exc}")
            return
        watch.started = self.clock()
        self.report(
            f"ddz: {child.name} {reason}; restarted  {new.address}  (pid {new.process.pid})"
        )


def migrate(settings: Settings) -> None:
    """Create or upgrade the store's and the services' tables once, before the services
    start, so they do not all race to do it."""
    from ddz.adapters.service_db import upgrade_service_db
    from ddz.adapters.store import make_engine, upgrade_store

    ensure_dir(settings.data_dir)
    engine = make_engine(settings.database_url)
    try:
        upgrade_store(engine)
        upgrade_service_db(engine)
    finally:
        engine.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ddz.adapters.runtime.stack health NAME``: exit 0 when the service NAME at its
    configured address answers SERVING (container health checks), else 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "health" or args[1] not in SERVICE_PORTS:
        print(f"usage: python -m ddz.adapters.runtime.stack health {{{','.join(SERVICE_PORTS)}}}",
              file=sys.stderr)  # fmt: skip
        return 2
    settings = Settings.from_env()
    status = health_status(settings.address(args[1]), timeout=2.0, settings=settings)
    return 0 if status == SERVING else 1


if __name__ == "__main__":
    sys.exit(main())
