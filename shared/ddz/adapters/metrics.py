"""The Prometheus metrics of a service process, and the HTTP server that exposes them.

One registry per process (``REGISTRY``): a service process serves it on its metrics
address (``Settings.metrics_address``, ``DDZ_<NAME>_METRICS_PORT``). Services started
in one process (the in-process test suites) share it, so every series that one service
of several could write carries a label naming its writer (``service``, ``durable``,
``feed``). docs/OPERATIONS.md ("Metrics") says what each means and what to alert on.

Recording is cheap and never fails a call: a counter or histogram update is a dict
lookup and an add under a lock. The consumer loops hand over what the message's reply
subject says (``bus.delivery_of``: the delivery count and the consumer's pending count).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIServer

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

if TYPE_CHECKING:  # the bus records into these metrics
    from ddz.adapters.bus import DeliveryTokens

log = structlog.get_logger("ddz.metrics")

REGISTRY = CollectorRegistry()
"""Every metric of this process (not prometheus_client's global registry, which also
holds the client's own process and GC collectors)."""

LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0
)  # fmt: skip
"""Seconds: a rules decision takes about a millisecond, a slow store write seconds."""

RPC_HANDLED = Counter(
    "ddz_rpc_handled",
    "gRPC calls finished, by service, method and final status code (refusals and "
    "crashes included).",
    ("service", "method", "code"),
    registry=REGISTRY,
)
RPC_DURATION = Histogram(
    "ddz_rpc_duration_seconds",
    "Seconds from a gRPC call's start to its end, by service and method.",
    ("service", "method"),
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
EVENTS_PUBLISHED = Counter(
    "ddz_events_published",
    "Events stored on the bus by this process (duplicates not counted), by stream "
    "category and event type.",
    ("category", "type"),
    registry=REGISTRY,
)
EVENTS_CONSUMED = Counter(
    "ddz_events_consumed",
    "Messages handed to a durable consumer's loop, redeliveries included.",
    ("durable",),
    registry=REGISTRY,
)
EVENTS_REDELIVERED = Counter(
    "ddz_events_redelivered",
    "Messages a durable consumer got again (delivered more than once).",
    ("durable",),
    registry=REGISTRY,
)
CONSUMER_PENDING = Gauge(
    "ddz_consumer_pending",
    "Messages of the stream the durable consumer has not been sent yet, as of its "
    "last message: its lag.",
    ("durable",),
    registry=REGISTRY,
)
HANDS_IN_PLAY = Gauge(
    "ddz_hands_in_play",
    "Hands a hand feed follows that are not over, by feed (its durable consumer).",
    ("feed",),
    registry=REGISTRY,
)
DECISION_SECONDS = Histogram(
    "ddz_decision_seconds",
    "Seconds a bot move took from sending it to the rules service to its answer.",
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
LEASES_HELD = Gauge(
    "ddz_leases_held",
    "Instance leases this process holds, by service.",
    ("service",),
    registry=REGISTRY,
)
TABLE_ACTIVE = Gauge(
    "ddz_table_active",
    "1 while this process's table instance is the active one (it holds the lease "
    "`table`: the tables, room queues and turn clocks), 0 on a standby.",
    registry=REGISTRY,
)
TABLE_FORWARDED = Counter(
    "ddz_table_forwarded",
    "TableService calls a standby table instance sent on to the active one, by method and "
    "final status code (UNAVAILABLE with no active known or reachable included).",
    ("method", "code"),
    registry=REGISTRY,
)


def rpc_finished(service: str, method: str, code: str, seconds: float) -> None:
    """One gRPC call ended with status ``code`` (a ``grpc.StatusCode`` name)."""
    RPC_HANDLED.labels(service, method, code).inc()
    RPC_DURATION.labels(service, method).observe(seconds)


def event_published(category: str, event_type: str) -> None:
    """An event of a ``category`` stream (``hand``, ``table``) was stored."""
    EVENTS_PUBLISHED.labels(category, event_type).inc()


def event_consumed(durable: str, delivery: DeliveryTokens | None) -> None:
    """A message reached ``durable``'s loop; ``delivery``: what its reply subject says
    (``bus.delivery_of``), None for a message that did not come from JetStream."""
    EVENTS_CONSUMED.labels(durable).inc()
    if delivery is None:
        return
    if delivery.delivered > 1:
        EVENTS_REDELIVERED.labels(durable).inc()
    CONSUMER_PENDING.labels(durable).set(delivery.pending)


def follow_hands(feed: str, count: Callable[[], int]) -> None:
    """``ddz_hands_in_play{feed}`` reads ``count()`` at each scrape."""
    HANDS_IN_PLAY.labels(feed).set_function(count)


def unfollow_hands(feed: str) -> None:
    """The feed stopped: its series goes (and the scrape no longer calls into it)."""
    with contextlib.suppress(KeyError):
        HANDS_IN_PLAY.remove(feed)


def decision_took(seconds: float) -> None:
    DECISION_SECONDS.observe(seconds)


def table_forwarded(method: str, code: str) -> None:
    """A standby's call to ``method`` (``Play``) ended with ``code`` (a status code name)."""
    TABLE_FORWARDED.labels(method, code).inc()


@dataclass
class MetricsServer:
    """The HTTP exposition server of this process's registry (``GET /metrics``)."""

    host: str
    port: int
    _server: WSGIServer
    _thread: threading.Thread

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self) -> None:
        """Stop serving and free the port (within the server's half-second poll)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)

    def stop_soon(self) -> None:
        """``stop`` on a thread of its own, not waited for (a service stopped in a test
        process need not wait for the poll)."""
        threading.Thread(target=self.stop, name="metrics-stop", daemon=True).start()


def serve_metrics(service: str, address: str) -> MetricsServer:
    """Serve ``REGISTRY`` at ``address`` (``host:port``; port 0: any free one) on a
    daemon thread; ``OSError`` when the address cannot be bound."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    try:
        server, thread = start_http_server(int(port), addr=host, registry=REGISTRY)
    except OSError as exc:
        raise OSError(
            f"{service}: cannot serve metrics on {address} ({exc.strerror or exc}): set "
            f"DDZ_{service.upper()}_METRICS_PORT to a free port"
        ) from None
    bound = MetricsServer(host, int(server.server_port), server, thread)
    shown = f"[{host}]" if ":" in host else host
    log.info("metrics", service=service, address=f"{shown}:{bound.port}")
    return bound
