"""The whole suite on one machine: a NATS server and the six services as child processes.

    with Stack(Settings.from_env()) as stack:      # ``ddz up``, simulate, bench, e2e tests
        channel = make_channel(stack.settings.calling, "table")

``start()`` starts ``nats-server`` with JetStream under the data directory (unless
``DDZ_NATS_URL`` names a server; on a random port when 4222 is taken), migrates the store and
the services' tables once, makes what is missing of the token keys and of the local CA and
certificates (``ddz.adapters.security.certs``), starts every service as ``python -m
services.<name>`` with the environment rebuilt from the one ``Settings`` object, and returns
when every service's health check answers SERVING. Each service logs (JSON lines, and anything
it prints) to ``<data dir>/logs/<name>.log``.

``scale`` starts several instances of a service (``ddz up --scale rules=3``): the first is named
after the service and has its port, the others ``rules-2``, ``rules-3`` ... on free ports; every
client is given all of them (``DDZ_RULES_ADDR`` a comma list). ``nats_cluster=3`` starts a
JetStream cluster of three nodes (``nats-1`` ... on loopback routes) instead of one server, with
every stream replicated three times. Once ready, the stack writes where everything is to
``<data dir>/stack.json`` (``stack_file``), where the tools find it; ``stop()`` removes it.

Before anything starts (``claim``), the stack takes the data dir's lock
(``suite_lock``: one suite per data dir) and checks that every port its settings name is
free; either refusal is a ``SetupRefused`` of one line. Each start moves the last run's
logs to ``logs/previous/``; a restart (``restart``) rewrites ``stack.json``.

``stop()`` sends SIGTERM to every service and waits (SIGKILL after ``grace`` seconds),
then stops NATS: children first, so they can finish and ack what is in flight. Every
child runs in its own session, so a terminal's Ctrl-C reaches only the supervisor,
which then stops everything in that order. Its children are kept running by
``supervisor.Supervisor``. It keeps the whole ``Settings`` (a composition root): every
child's environment is rebuilt from it (``stack_env``), and it prepares every part's files.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from ddz.access.token_keys import ensure_keys
from ddz.adapters.files.data_files import ensure_dir
from ddz.adapters.messaging import nats_auth
from ddz.adapters.runtime import stack_file
from ddz.adapters.runtime.children import ServiceProcess, ServiceRefused, SetupRefused, StackError
from ddz.adapters.runtime.nats_server import (
    NatsCluster,
    NatsServer,
    free_port,
    listenable,
    reserve,
    start_nats_cluster,
    start_nats_server,
)
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.runtime.stack_env import (
    CLUSTER_DIR,
    SCALED_BOT_PARTITIONS,
    SERVICES,
    named_ports,
    settings_env,
    traced_as,
    with_free_ports,
)
from ddz.adapters.runtime.stopping import Stop
from ddz.adapters.runtime.suite_lock import SuiteLock, SuiteRunning, new_run_logs
from ddz.adapters.security.certs import ensure_certificates, suite_hosts
from ddz.adapters.service_db import migrate
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS, WILDCARD_HOSTS

NATS = "nats"
"""The name of the stack's own nats-server among its children (a cluster's nodes are
``nats-1``, ``nats-2`` ...)."""


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
        if nats_cluster > 1 and settings.bus.nats_url:
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
        address = self.settings.network.metrics_address(service)
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
            self._lock.acquire("" if self.ephemeral_ports else settings.network.address("table"))
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
        ensure_dir(settings.telemetry.log_dir, "directory of the logs")
        new_run_logs(settings.telemetry.log_dir)
        # The ports the settings name are bound only by the children: never picked here
        # for NATS or another instance meanwhile.
        reserve(port for service in self.services for port in named_ports(settings, service))
        if not settings.bus.nats_url:
            settings = self._start_nats(settings)
        if self.ephemeral_ports:
            settings = with_free_ports(settings, self.services)
        logged = dataclasses.replace(settings.telemetry, log_to_file=True)
        settings = self._place_instances(dataclasses.replace(settings, telemetry=logged))
        self.settings = settings
        migrate(settings.store, settings.data_dir)
        ensure_keys(settings.keys)  # a fresh machine: each token key made before it is read
        if not settings.tls.insecure:
            # The CA and every identity's certificate, naming the hosts it runs on.
            hosts = suite_hosts(settings.network, settings.table.table_advertise)
            ensure_certificates(settings.data_dir, hosts=hosts)
        self._env = self.child_env()
        for service in self.services:
            for name in self._instance_names(service):
                self.processes[name] = self._spawn(name, self._env)
        self._wait_ready(cancel)
        stack_file.write(self)
        self._published = True
        self._lock.update(self.settings.network.address("table"))

    def _check_ports(self, settings: Settings) -> None:
        """Refuse to start when a port the settings name is taken: one line naming it and
        the setting that moves it, before any child starts (a service that cannot bind
        would exit, and health checks would knock at whatever listens there instead)."""
        wanted: list[tuple[str, int, str, str]] = []  # (host, port, what, what to do)
        if not settings.bus.nats_url and not self.nats_cluster and self.nats_port:
            move = "give --nats-port another port (0: any free one)"
            wanted.append((settings.network.host, self.nats_port, "NATS", move))
        for service in self.services:
            name = f"DDZ_{service.upper()}"
            host = settings.network.listen_address(service).rsplit(":", 1)[0]
            if not self.ephemeral_ports:
                setting = f"{name}_LISTEN" if service in settings.network.listen else f"{name}_PORT"
                wanted.append((host, settings.network.port(service), f"{service} gRPC", setting))
                metrics = settings.network.metrics_port(service)
                wanted.append((host, metrics, f"{service} metrics", f"{name}_METRICS_PORT"))
            probe = settings.network.probe_ports.get(service, 0)
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
            settings.data_dir, sync_interval=settings.bus.nats_sync
        )
        if self.nats_cluster:
            self.cluster = start_nats_cluster(
                settings.data_dir / CLUSTER_DIR, self.nats_cluster, host=settings.network.host,
                include=self._nats_config, log_dir=settings.telemetry.log_dir,
            )  # fmt: skip
            url = self.cluster.url
            # A stream on three nodes is kept by each; one on fewer would lose the
            # point of the cluster (an operator's higher setting is kept).
            replicas = max(settings.bus.stream_replicas, min(3, self.nats_cluster))
            bus = dataclasses.replace(settings.bus, stream_replicas=replicas)
            settings = dataclasses.replace(settings, bus=bus)
        else:
            logs = settings.telemetry.log_dir
            self.nats = start_nats_server(
                settings.bus.nats_store_dir, log_file=logs / "nats-server.log",
                host=settings.network.host, port=self.nats_port, config_file=self._nats_config,
            )  # fmt: skip
            url = self.nats.url
        bus = dataclasses.replace(settings.bus, nats_url=url)
        settings = dataclasses.replace(settings, bus=bus)
        asyncio.run(nats_auth.provision_stream(settings.bus))
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
        network = settings.network
        for service in self.services:
            names = self._instance_names(service)
            if len(names) == 1:
                continue
            first = network.address(service)
            dial_host = first.rsplit(":", 1)[0]
            targets = [first]
            for name in names[1:]:
                port = free_port(network.host)
                own = {
                    # Its log lines go to stderr, which is its own log file (not the
                    # first instance's <service>.log).
                    "DDZ_LOG_TO_FILE": "false",
                    f"DDZ_{service.upper()}_PORT": str(port),
                    f"DDZ_{service.upper()}_METRICS_PORT": str(free_port(network.host)),
                }
                if service in network.listen:
                    own[f"DDZ_{service.upper()}_LISTEN"] = network.listen_address(service, port)
                if service in network.probe_ports:
                    own[f"DDZ_{service.upper()}_PROBE_PORT"] = str(free_port(network.host))
                if service == "console":  # its pages too
                    own["DDZ_CONSOLE_WEB_PORT"] = str(free_port(network.host))
                if service == "play":  # its page and gRPC-Web too
                    own["DDZ_PLAY_WEB_PORT"] = str(free_port(network.host))
                self._instance_env[name] = own
                targets.append(f"{dial_host}:{port}")
            addresses[service] = ",".join(targets)
        if self.scale.get("bot", 1) > 1 and settings.bot.bot_partitions == 1:
            bot = dataclasses.replace(settings.bot, bot_partitions=SCALED_BOT_PARTITIONS)
            settings = dataclasses.replace(settings, bot=bot)
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
        log_file = self.settings.telemetry.log_dir / f"{name}.log"
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
        address = self.settings.network.address(service).split(",")[0]
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
                if health_status(child.address, 0.5, settings=self.settings.calling) == SERVING:
                    del waiting[name]
            if waiting and time.monotonic() > deadline:
                names = ", ".join(sorted(waiting))
                raise StackError(
                    f"not SERVING after {self.ready_timeout:g}s: {names} "
                    f"(logs in {self.settings.telemetry.log_dir})"
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ddz.adapters.runtime.stack health NAME``: exit 0 when the service NAME at its
    configured address answers SERVING (container health checks), else 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "health" or args[1] not in SERVICE_PORTS:
        print(f"usage: python -m ddz.adapters.runtime.stack health {{{','.join(SERVICE_PORTS)}}}",
              file=sys.stderr)  # fmt: skip
        return 2
    settings = Settings.from_env()
    status = health_status(settings.network.address(args[1]), 2.0, settings=settings.calling)
    return 0 if status == SERVING else 1


if __name__ == "__main__":
    sys.exit(main())
