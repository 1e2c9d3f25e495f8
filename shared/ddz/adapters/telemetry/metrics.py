"""The Prometheus metrics of a service process, and the HTTP server that exposes them.

One registry per process (``REGISTRY``): a service process serves it on its metrics
address (``NetworkSettings.metrics_address``, ``DDZ_<NAME>_METRICS_PORT``). Services started
in one process (the in-process test suites) share it, so every series that one service
of several could write carries a label naming its writer (``service``, ``durable``,
``feed``). docs/OPERATIONS.md ("Metrics") says what each means and what to alert on.

Recording is cheap and never fails a call: a counter or histogram update is a dict
lookup and an add under a lock. The consumer loops hand over what the message's reply
subject says (``bus.delivery_of``: the delivery count and the consumer's pending count).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from wsgiref.simple_server import WSGIServer

import structlog
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.parser import text_string_to_metric_families

log = structlog.get_logger("ddz.metrics")


class ConsumedDelivery(Protocol):
    """What the metrics record of a message a consumer got (the bus's
    ``messaging.delivery.DeliveryTokens`` is one)."""

    @property
    def delivered(self) -> int:
        """Times it was delivered, this one included."""
        ...

    @property
    def pending(self) -> int:
        """Messages of the stream the consumer has not sent yet: its lag."""
        ...


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
SERVING = Gauge(
    "ddz_serving",
    "1 while the service's health says SERVING (everything it depends on answers), 0 "
    "while NOT_SERVING, by service.",
    ("service",),
    registry=REGISTRY,
)
NATS_CONNECTED = Gauge(
    "ddz_nats_connected",
    "1 while the service's NATS connection is up, 0 while it is lost, by service.",
    ("service",),
    registry=REGISTRY,
)
NATS_RECONNECTS = Counter(
    "ddz_nats_reconnects",
    "Times the service's NATS connection came back after a loss (to the same node or "
    "another of the cluster), by service.",
    ("service",),
    registry=REGISTRY,
)
EVENTS_REFUSED = Counter(
    "ddz_events_refused",
    "Events this process refused because they were not signed by a producer allowed to "
    "sign them, by why (unsigned, unknown_key, bad_signature, not_allowed).",
    ("why",),
    registry=REGISTRY,
)
HANDS_AUDITED = Counter(
    "ddz_hands_audited",
    "Hands the recorder audited (AuditService: ddz audit), by verdict (clean, failed, incomplete).",
    ("verdict",),
    registry=REGISTRY,
)
HANDS_STALLED = Gauge(
    "ddz_hands_stalled",
    "Hands in play the bot's watchdog follows that have had no event for longer than the "
    "turn clock plus its margin (DDZ_TURN_TIMEOUT + DDZ_STALL_MARGIN), as of the scrape.",
    registry=REGISTRY,
)
PROCESS = ProcessCollector(namespace="ddz", registry=REGISTRY)
"""The process's CPU seconds, memory, open files and start time (``ddz_process_*``):
per-service CPU, and restarts (``changes(ddz_process_start_time_seconds[...])``)."""

REFUSALS = ("unsigned", "unknown_key", "bad_signature", "not_allowed")
VERDICTS = ("clean", "failed", "incomplete")
for _why in REFUSALS:  # every series exists from the start: a rate over it is 0, not empty
    EVENTS_REFUSED.labels(_why)
for _verdict in VERDICTS:
    HANDS_AUDITED.labels(_verdict)


@functools.lru_cache(maxsize=4096)
def _child(metric: Any, *labels: str) -> Any:
    """``metric.labels(*labels)``, looked up once: the metrics below are counted for
    every call and every message, and ``labels`` takes a lock and builds its key each
    time. Their label values are few (services, methods, codes, event types, durables)."""
    return metric.labels(*labels)


def rpc_finished(service: str, method: str, code: str, seconds: float) -> None:
    """One gRPC call ended with status ``code`` (a ``grpc.StatusCode`` name)."""
    _child(RPC_HANDLED, service, method, code).inc()
    _child(RPC_DURATION, service, method).observe(seconds)


def event_published(category: str, event_type: str) -> None:
    """An event of a ``category`` stream (``hand``, ``table``) was stored."""
    _child(EVENTS_PUBLISHED, category, event_type).inc()


def event_consumed(durable: str, delivery: ConsumedDelivery | None) -> None:
    """A message reached ``durable``'s loop; ``delivery``: what its reply subject says
    (``bus.delivery_of``), None for a message that did not come from JetStream."""
    _child(EVENTS_CONSUMED, durable).inc()
    redelivered = _child(EVENTS_REDELIVERED, durable)  # 0 until one is: a rate, not nothing
    if delivery is None:
        return
    if delivery.delivered > 1:
        redelivered.inc()
    _child(CONSUMER_PENDING, durable).set(delivery.pending)


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


def serving(service: str, up: bool) -> None:
    SERVING.labels(service).set(1 if up else 0)


def nats_connection(service: str, connected: bool, *, reconnected: bool = False) -> None:
    """The service's NATS connection is up (``connected``) or lost; ``reconnected``: it
    came back after a loss."""
    NATS_CONNECTED.labels(service).set(1 if connected else 0)
    reconnects = NATS_RECONNECTS.labels(service)  # 0 until the first: a rate, not nothing
    if reconnected:
        reconnects.inc()


def event_refused(why: str) -> None:
    """An event failed its signature check (``event_signing.BadEvent.why``)."""
    EVENTS_REFUSED.labels(why).inc()


def hands_audited(verdict: str, count: int = 1) -> None:
    HANDS_AUDITED.labels(verdict).inc(count)


def follow_stalls(count: Callable[[], int]) -> None:
    """``ddz_hands_stalled`` reads ``count()`` at each scrape (the bot's watchdog)."""
    HANDS_STALLED.set_function(count)


def unfollow_stalls() -> None:
    HANDS_STALLED.set_function(lambda: 0)


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


def calls_handled(address: str) -> dict[str, float]:
    """gRPC calls the process serving metrics at ``address`` (``host:port``) has
    finished so far, by method, every status code summed (``ddz_rpc_handled``)."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        text = answer.read().decode("utf-8")
    calls: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "ddz_rpc_handled_total":
                method = sample.labels.get("method", "")
                calls[method] = calls.get(method, 0.0) + sample.value
    return calls
