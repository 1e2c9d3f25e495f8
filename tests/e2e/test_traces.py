"""Traces across the suite as ``ddz up`` runs it (NATS and the six services as real
processes, on free ports), exported with the standard ``OTEL_*`` variables to OTLP
receivers this test runs: HTTP (``http/protobuf``, decoding ``ExportTraceServiceRequest``)
and gRPC (a ``TraceService``), one stack each.

A move of a hand is one trace: the rules' call and its publish to JetStream, then the
hops of its events through NATS as children (table, bot, settlement) or linked from a
batch (the recorder, whose per-message spans are children too). The trace context rides
in the messages' headers, so the producers' signatures still verify (``ddz audit`` is
clean); the recorder keeps each event's trace id, which the audit prints; log lines
written inside a span carry its ids.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import pytest
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.store import create_store
from ddz.config import Settings
from ddz.loadgen.driver import Driver, HandResult
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

HANDS = 2
SERVICES = ("ddz-table", "ddz-rules", "ddz-recorder", "ddz-settlement", "ddz-bot")
PRODUCER, CONSUMER, SERVER = 4, 5, 2  # opentelemetry.proto.trace.v1.Span.SpanKind


@dataclass(frozen=True)
class Span:
    service: str
    instance: str
    trace_id: str
    span_id: str
    parent: str
    name: str
    kind: int
    links: tuple[tuple[str, str], ...]


@dataclass
class Received:
    """Every span an OTLP receiver was sent, decoded from the wire."""

    spans: list[Span] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
        found = []
        for resource_spans in request.resource_spans:
            attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for s in scope.spans:
                    found.append(Span(
                        attributes.get("service.name", ""),
                        attributes.get("service.instance.id", ""),
                        s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.name,
                        s.kind, tuple((link.trace_id.hex(), link.span_id.hex())
                                      for link in s.links),
                    ))  # fmt: skip
        with self.lock:
            self.spans.extend(found)

    def snapshot(self) -> list[Span]:
        with self.lock:
            return list(self.spans)


class _OtlpHttp(BaseHTTPRequestHandler):
    received: Received

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        self.server.received.add(  # type: ignore[attr-defined]
            trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        )
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _OtlpGrpc(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request: Any, context: Any) -> Any:
        self.received.add(request)
        return trace_service_pb2.ExportTraceServiceResponse()


@dataclass
class Traced:
    protocol: str
    settings: Settings
    results: list[HandResult]
    received: Received


def _receiver(protocol: str, received: Received) -> tuple[str, Any]:
    """A receiver on a free loopback port: its endpoint URL and a way to stop it."""
    if protocol == "grpc":
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_OtlpGrpc(received), server)
        port = server.add_insecure_port("127.0.0.1:0")  # loopback only, the test's own
        server.start()
        return f"http://127.0.0.1:{port}", lambda: server.stop(0)
    http = ThreadingHTTPServer(("127.0.0.1", 0), _OtlpHttp)
    http.received = received  # type: ignore[attr-defined]
    threading.Thread(target=http.serve_forever, daemon=True).start()

    def stop() -> None:
        http.shutdown()
        http.server_close()

    return f"http://127.0.0.1:{http.server_address[1]}", stop


@pytest.fixture(scope="module", params=["http/protobuf", "grpc"])
def traced(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Traced]:
    protocol: str = request.param
    received = Received()
    endpoint, stop = _receiver(protocol, received)
    data_dir = tmp_path_factory.mktemp("ddz-traced")
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data_dir), "DDZ_LOG_TO_FILE": "1"})
    otel = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # ms: the spans arrive while the test waits
    }
    try:
        with Stack(settings, ephemeral_ports=True, nats_port=0, extra_env=otel) as running:
            results = asyncio.run(_play(running.settings))
            _wait_for(received, results)
            traced = Traced(protocol, running.settings, results, received)
        yield traced  # the stack stopped: its store is read by the audit alone
    finally:
        stop()


async def _play(settings: Settings) -> list[HandResult]:
    async with Driver(settings.calling, settings.keys) as driver:
        results = await driver.play("classic", hands=HANDS, tables=1)
        assert len(results) == HANDS
        await driver.stored_events(results)  # the recorder has stored every event
        await driver.settlement(results)  # and settlement has applied each hand
        return results


def _wait_for(received: Received, results: list[HandResult], timeout: float = 60.0) -> None:
    """Until the last hand's settlement span has arrived (exports are batched)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        settled = [s for s in received.snapshot() if s.service == "ddz-settlement"
                   and s.kind == CONSUMER]  # fmt: skip
        if len(settled) >= len(results):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"no settlement spans arrived: {len(received.snapshot())} spans")
    seen = -1  # then until the spans stop coming (the recorder's last batch among them)
    while (count := len(received.snapshot())) != seen and time.monotonic() < deadline:
        seen = count
        time.sleep(1.0)


def _stored(settings: Settings, hand_id: str) -> list[Any]:
    store = create_store(settings.store.database_url)
    try:
        return store.read_stream(f"hand-{hand_id}")
    finally:
        store.close()


def _settling_trace(traced: Traced, hand_id: str) -> tuple[str, list[Span]]:
    """The trace of the move that ended ``hand_id``: the trace its hand_settled event was
    stored with, and every span of it."""
    settled = [e for e in _stored(traced.settings, hand_id) if e.type == "hand_settled"]
    assert len(settled) == 1
    trace_id = settled[0].trace_id
    assert trace_id is not None and len(trace_id) == 32
    return trace_id, [s for s in traced.received.snapshot() if s.trace_id == trace_id]


def test_a_move_is_one_trace_across_the_services(traced: Traced) -> None:
    for result in traced.results:
        trace_id, spans = _settling_trace(traced, result.hand_id)
        services = {s.service for s in spans}
        assert set(SERVICES) <= services, (traced.protocol, sorted(services))
        by_id = {s.span_id: s for s in spans}
        # The rules served the move's call, and published its events inside it.
        served = [s for s in spans if s.service == "ddz-rules" and s.kind == SERVER]
        published = [s for s in spans if s.service == "ddz-rules" and s.kind == PRODUCER]
        assert served and published
        assert all(by_id[p.parent].service == "ddz-rules" for p in published)
        publishes = {p.span_id for p in published}
        # Every NATS hop continues the publish: a child of it, and the recorder's batch
        # links it.
        for service in ("ddz-table", "ddz-bot", "ddz-settlement", "ddz-recorder"):
            hops = [s for s in spans if s.service == service and s.kind == CONSUMER]
            assert hops and all(h.parent in publishes for h in hops), service
        batches = [s for s in traced.received.snapshot() if s.service == "ddz-recorder"
                   and any(link[0] == trace_id for link in s.links)]  # fmt: skip
        assert batches and all(s.trace_id != trace_id for s in batches)
        assert {link[1] for b in batches for link in b.links if link[0] == trace_id} <= publishes


def test_every_service_and_instance_is_named(traced: Traced) -> None:
    spans = traced.received.snapshot()
    named = {(s.service, s.instance) for s in spans}
    for service in SERVICES:
        instances = {instance for name, instance in named if name == service}
        assert instances == {f"{service.removeprefix('ddz-')}@{os.uname().nodename}"}


def test_stored_events_carry_their_trace_and_the_audit_is_clean(traced: Traced) -> None:
    hand_id = traced.results[-1].hand_id
    stored = _stored(traced.settings, hand_id)
    assert stored and all(e.trace_id for e in stored)  # every event came in a trace
    received = {s.trace_id for s in traced.received.snapshot()}
    assert {e.trace_id for e in stored} <= received
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DDZ_", "OTEL_"))}
    env["DDZ_DATA_DIR"] = str(traced.settings.data_dir)
    done = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "audit", hand_id, "--json"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "clean"  # producer signatures verify beside the headers
    traces = {e.stream_version: e.trace_id for e in stored}
    entries = report["timeline"]["entries"]
    assert entries and all(e["trace_id"] == traces[e["version"]] for e in entries)
    text = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "audit", hand_id],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    last = stored[-1]
    assert f"trace {last.trace_id}" in text.stdout


def test_log_lines_inside_spans_carry_their_ids(traced: Traced) -> None:
    spans = {(s.trace_id, s.span_id) for s in traced.received.snapshot()}
    inside = []
    for log_file in Path(traced.settings.telemetry.log_dir).glob("*.log"):
        for line in log_file.read_text().splitlines():
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            if "trace_id" in record:
                assert len(record["span_id"]) == 16, record
                inside.append((record["trace_id"], record["span_id"]))
    assert inside, "no log line was written inside a span"
    assert set(inside) <= spans
