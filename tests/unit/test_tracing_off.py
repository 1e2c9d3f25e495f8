"""Tracing off, the default: with no ``OTEL_*`` variable (or ``OTEL_TRACES_EXPORTER=none``)
nothing is installed: no tracer provider, no gRPC interceptor, no header on a NATS
message, no id on a log line, and a process that exits exports nothing. Each case runs in
a fresh interpreter: a tracer provider, once set, is the process's for good."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from ddz.config import Settings

PROBE = """
import io, json, sys
from opentelemetry import trace
from opentelemetry.trace import ProxyTracerProvider
from ddz.adapters.rpc import grpc_client
from ddz.adapters.telemetry import tracing
from ddz.adapters.telemetry.logging import configure_logging
from ddz.config import Settings

settings = Settings.from_env()
assert not tracing.configure_tracing(settings.telemetry, service="rules")
grpc_client.make_channel(settings.calling, target="127.0.0.1:1")  # a tool's first channel
assert not tracing.active()
assert isinstance(trace.get_tracer_provider(), ProxyTracerProvider)
assert tracing.server_interceptors() == [] and tracing.client_interceptors() == []
headers = {"Nats-Msg-Id": "e-1"}
with tracing.producing("ddz.v1.hand.1.h.play_made"), tracing.span("decide"):
    tracing.inject(headers)
assert headers == {"Nats-Msg-Id": "e-1"}
with tracing.consuming("recorder", "ddz.v1.hand.1.h.play_made", headers) as span:
    assert span is None
out = io.StringIO()
configure_logging(settings.telemetry, service="rules", stream=out)
import structlog
structlog.get_logger().info("inside_nothing")
line = json.loads(out.getvalue())
assert "trace_id" not in line and "span_id" not in line, line
tracing.shutdown_tracing()
print("untraced")
"""


class _Sink(BaseHTTPRequestHandler):
    posts: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.posts.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize("exporter", [None, "none", "NONE", ""])
def test_nothing_is_installed_or_exported_without_an_exporter(exporter: str | None) -> None:
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "DDZ_"))}
        env.update(DDZ_LOG_FORMAT="json", DDZ_INSECURE="1")
        # An endpoint alone turns nothing on: only OTEL_TRACES_EXPORTER does.
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{sink.server_address[1]}"
        if exporter is not None:
            env["OTEL_TRACES_EXPORTER"] = exporter
        done = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, env=env
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "untraced"
        assert _Sink.posts == []
    finally:
        sink.shutdown()
        sink.server_close()


@pytest.mark.parametrize(
    ("variable", "value"),
    [("OTEL_TRACES_EXPORTER", "zipkin"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
)
def test_an_exporter_or_protocol_the_suite_has_not_is_one_clear_error(
    variable: str, value: str
) -> None:
    with pytest.raises(ValueError, match=f"{variable} must be one of"):
        Settings.from_env({"OTEL_TRACES_EXPORTER": "otlp", variable: value})


def test_the_protocol_follows_the_traces_variable_first() -> None:
    both = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    assert Settings.from_env(both).telemetry.traces_protocol == "http/protobuf"
    both["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "grpc"
    assert Settings.from_env(both).telemetry.traces_protocol == "grpc"
    assert Settings.from_env({"OTEL_TRACES_EXPORTER": "none"}).telemetry.traces_exporter == ""
