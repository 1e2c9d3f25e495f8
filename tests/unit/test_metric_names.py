"""The metrics' names, the consumers' reading of a delivery, and where metrics are served."""

from __future__ import annotations

import re
import urllib.request

import pytest
from ddz.adapters.messaging.delivery import delivery_of
from ddz.adapters.messaging.subjects import split_subject, subject_for
from ddz.adapters.runtime.stack_env import settings_env
from ddz.adapters.telemetry import metrics
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS
from prometheus_client import Counter, Histogram
from prometheus_client.parser import text_string_to_metric_families

# The classic Prometheus charset: newer clients accept any UTF-8 name, older servers and
# most dashboards do not.
NAME = re.compile(r"^ddz_[a-z][a-z0-9_]*$")
LABEL = re.compile(r"^[a-z][a-z0-9_]*$")
# Units a name may end with (Prometheus: base units, plural).
UNITS = ("_seconds", "_bytes")


def test_every_metric_is_named_by_the_rules() -> None:
    found = {family.name: family for family in metrics.REGISTRY.collect()}
    expected = {
        "ddz_rpc_handled", "ddz_rpc_duration_seconds", "ddz_events_published",
        "ddz_events_consumed", "ddz_events_redelivered", "ddz_consumer_pending",
        "ddz_hands_in_play", "ddz_decision_seconds", "ddz_leases_held",
    }  # fmt: skip
    assert expected <= set(found)
    for name, family in found.items():
        assert NAME.match(name), name
        assert not name.endswith("_total"), f"{name}: the client adds _total to counters"
        assert family.documentation, f"{name} has no help text"
        if family.type == "histogram":
            assert name.endswith(UNITS), f"{name}: a histogram says its unit"
    counters = (metrics.RPC_HANDLED, metrics.EVENTS_PUBLISHED, metrics.EVENTS_CONSUMED)
    assert all(isinstance(counter, Counter) for counter in counters)
    histograms = (metrics.RPC_DURATION, metrics.DECISION_SECONDS)
    assert all(isinstance(histogram, Histogram) for histogram in histograms)
    for collector in metrics.REGISTRY._collector_to_names:  # every label name
        for label in getattr(collector, "_labelnames", ()):
            assert LABEL.match(label), label


NOW = 1700000000000000000  # a reply subject's timestamp, nanoseconds


def test_a_reply_subject_tells_the_delivery_count_stream_sequence_and_lag() -> None:
    # $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>
    assert delivery_of(f"$JS.ACK.DDZ.table.2.907.15.{NOW}.4") == (2, 907, 4)
    # Newer servers: a domain and an account hash after ACK, a random token at the end.
    assert delivery_of(f"$JS.ACK._.AHASH.DDZ.bot-1-of-2.1.33.31.{NOW}.0.tok") == (1, 33, 0)
    for reply in (None, "", "_INBOX.abc.def", f"$JS.ACK.DDZ.table.x.907.15.{NOW}.4"):
        assert delivery_of(reply) is None


def test_a_delivery_counts_as_consumed_redelivered_and_pending() -> None:
    durable = "unit-test-durable"
    before = metrics.EVENTS_REDELIVERED.labels(durable)._value.get()
    consumed = metrics.EVENTS_CONSUMED.labels(durable)._value.get()
    metrics.event_consumed(
        durable, delivery_of("$JS.ACK.DDZ.recorder.1.10.10.1700000000000000000.7")
    )
    assert metrics.CONSUMER_PENDING.labels(durable)._value.get() == 7
    assert metrics.EVENTS_REDELIVERED.labels(durable)._value.get() == before
    # A newer server's form: a domain and an account hash after ACK, and a random token.
    metrics.event_consumed(durable, delivery_of(f"$JS.ACK._.ABC.DDZ.recorder.3.11.12.{NOW}.2.x"))
    assert metrics.CONSUMER_PENDING.labels(durable)._value.get() == 2
    assert metrics.EVENTS_REDELIVERED.labels(durable)._value.get() == before + 1
    metrics.event_consumed(durable, delivery_of(None))  # not from JetStream: counted alone
    assert metrics.EVENTS_CONSUMED.labels(durable)._value.get() == consumed + 3


def test_a_published_subject_gives_category_and_type() -> None:
    """The labels of ``ddz_events_published_total`` are read off the subject by the
    bus's one reading of the layout (``split_subject``), public or internal alike."""
    for internal in (True, False):
        parts = split_subject(subject_for("hand-h1", "unit_test_event", internal=internal))
        assert parts is not None
        assert (parts.category, parts.entity_id, parts.event_type, parts.internal) == (
            "hand", "h1", "unit_test_event", internal,
        )  # fmt: skip
    assert split_subject("ddz.v1.hand.h1.unit_test_event") is None  # no bucket
    assert split_subject("other.v1.hand.7.h1.unit_test_event") is None
    counter = metrics.EVENTS_PUBLISHED.labels("hand", "unit_test_event")
    before = counter._value.get()
    metrics.event_published("hand", "unit_test_event")
    assert counter._value.get() == before + 1


def test_metrics_default_beside_the_grpc_port_and_follow_the_listen_host() -> None:
    settings = Settings.from_env({})
    assert settings.network.metrics_address("rules") == "127.0.0.1:51052"
    for service, port in SERVICE_PORTS.items():
        assert settings.network.metrics_port(service) == port + 1000
    moved = Settings.from_env({"DDZ_HOST": "0.0.0.0", "DDZ_RULES_PORT": "6000"})
    assert moved.network.metrics_address("rules") == "0.0.0.0:7000"
    listen = Settings.from_env(
        {"DDZ_RULES_LISTEN": "10.0.0.5:50052", "DDZ_RULES_METRICS_PORT": "9100"}
    )
    assert listen.network.metrics_address("rules") == "10.0.0.5:9100"
    assert listen.network.metrics_address("dealer") == "127.0.0.1:51051"
    assert Settings.from_env({"DDZ_RULES_PORT": "0"}).network.metrics_port("rules") == 0
    assert Settings.from_env({"DDZ_RULES_PORT": "65000"}).network.metrics_port("rules") == 0
    assert Settings.from_env({"DDZ_RULES_METRICS_PORT": "0"}).network.metrics_port("rules") == 0
    with pytest.raises(ValueError, match="DDZ_RULES_METRICS_PORT"):
        Settings.from_env({"DDZ_RULES_METRICS_PORT": "70000"})
    assert Settings.from_env(settings_env(listen)) == listen


def test_the_exposition_server_serves_the_registry() -> None:
    server = metrics.serve_metrics("unit", "127.0.0.1:0")
    try:
        metrics.LEASES_HELD.labels("unit").set(0)
        with urllib.request.urlopen(f"http://{server.address}/metrics", timeout=10) as answer:
            text = answer.read().decode("utf-8")
    finally:
        server.stop()
    names = {family.name for family in text_string_to_metric_families(text)}
    assert {"ddz_rpc_handled", "ddz_leases_held", "ddz_consumer_pending"} <= names
