"""Where each service listens and where its clients dial it: ``DDZ_HOST``,
``DDZ_<SERVICE>_PORT``, ``_ADDR``, ``_LISTEN``, ``_METRICS_PORT``, ``_PROBE_PORT`` and the
web fronts' ports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ddz.environment import int_of, web_port_of

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
METRICS_PORT_OFFSET = 1000
"""A service's default metrics port is its gRPC port plus this (rules: 51052)."""
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]"})
"""Listen hosts that mean every interface; clients on this host dial loopback instead."""


def _none() -> Mapping[str, str]:
    return MappingProxyType({})


def _no_ports() -> Mapping[str, int]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    """The services' ports and addresses."""

    host: str = "127.0.0.1"
    ports: Mapping[str, int] = field(default_factory=lambda: SERVICE_PORTS)
    # Where clients dial each service (``DDZ_<NAME>_ADDR``) and where each listens
    # (``DDZ_<NAME>_LISTEN``); a service missing here falls back to host and port.
    addresses: Mapping[str, str] = field(default_factory=_none)
    listen: Mapping[str, str] = field(default_factory=_none)
    # ``DDZ_<NAME>_METRICS_PORT`` of the services that set one (``metrics_address``).
    metrics_ports: Mapping[str, int] = field(default_factory=_no_ports)
    # ``DDZ_<NAME>_PROBE_PORT`` of the services that set one: a plaintext listener with the
    # health service alone, for probes that cannot speak TLS (``probe_address``).
    probe_ports: Mapping[str, int] = field(default_factory=_no_ports)
    console_web_port: int = DEFAULT_CONSOLE_WEB_PORT  # DDZ_CONSOLE_WEB_PORT: its HTTPS pages
    play_web_port: int = DEFAULT_PLAY_WEB_PORT  # DDZ_PLAY_WEB_PORT (services/play)

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

    def with_addresses(self, **targets: str) -> NetworkSettings:
        """A copy in which clients dial the given services at the given targets."""
        return replace(self, addresses=MappingProxyType({**self.addresses, **targets}))


def network_from_env(env: Mapping[str, str]) -> NetworkSettings:
    ports = {
        service: int_of(env, f"DDZ_{service.upper()}_PORT", default, low=0, high=65535)
        for service, default in SERVICE_PORTS.items()
    }
    return NetworkSettings(
        host=env.get("DDZ_HOST", "").strip() or "127.0.0.1",
        ports=MappingProxyType(ports),
        addresses=MappingProxyType(targets_of(env, "ADDR", several=True)),
        listen=MappingProxyType(targets_of(env, "LISTEN")),
        metrics_ports=MappingProxyType(ports_of(env, "METRICS_PORT")),
        probe_ports=MappingProxyType(ports_of(env, "PROBE_PORT")),
        console_web_port=web_port_of(env, "DDZ_CONSOLE_WEB_PORT", DEFAULT_CONSOLE_WEB_PORT),
        play_web_port=web_port_of(env, "DDZ_PLAY_WEB_PORT", DEFAULT_PLAY_WEB_PORT),
    )


def ports_of(env: Mapping[str, str], suffix: str) -> dict[str, int]:
    """``DDZ_<NAME>_<suffix>`` of every service that sets one."""
    return {
        service: int_of(env, f"DDZ_{service.upper()}_{suffix}", 0, low=0, high=65535)
        for service in SERVICE_PORTS
        if env.get(f"DDZ_{service.upper()}_{suffix}", "").strip()
    }


def targets_of(env: Mapping[str, str], suffix: str, *, several: bool = False) -> dict[str, str]:
    """``DDZ_<NAME>_<suffix>`` of every service that has one; ``several``: a comma list
    of targets is allowed (the instances of a service, ``NetworkSettings.targets``)."""
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
