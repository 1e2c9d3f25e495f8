"""The one tracing setup of every process (services, ``ddz up``'s children, the tools that
call services): OpenTelemetry, configured by the standard ``OTEL_*`` variables alone.

Off unless ``OTEL_TRACES_EXPORTER`` names an exporter (``TelemetrySettings.traces_exporter``):
unset or ``none`` installs no tracer provider, no gRPC interceptor, no header is written
to NATS and no span is started, so tracing off costs a boolean test per publish, per
message handled and per log line. On:

- ``otlp`` sends spans over ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or
  ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf``, the default, or ``grpc``) to
  ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``; ``console`` prints them (development).
  The exporters, the batch processor (``OTEL_BSP_*``), the sampler
  (``OTEL_TRACES_SAMPLER[_ARG]``) and the resource (``OTEL_SERVICE_NAME``,
  ``OTEL_RESOURCE_ATTRIBUTES``) read their own variables; a process whose environment
  names no service is ``ddz-<service>``.
- gRPC: the OpenTelemetry interceptors, outermost on every server (``server_interceptors``)
  and channel (``client_interceptors``), so a call's span is the parent of what the call
  logs and does, and the W3C ``traceparent`` travels in its metadata.
- NATS: ``inject`` puts the current span's ``traceparent`` (and ``tracestate``) in a
  message's headers: outside the signed envelope, whose bytes do not change. A consumer
  handling one message continues its producer's trace (``consuming``: a child of the
  context in the headers); one handling a batch starts its own span linked to every
  message's context (``consuming_batch``), and each message's own child span
  (``message_span``) so every producer's trace shows the hop.
- Logs: ``add_trace_ids`` (a structlog processor of ``adapters/telemetry/logging.py``) writes
  ``trace_id`` and ``span_id`` on every line logged inside a span.

``trace_id_of(headers)`` reads the trace id a message carries whether or not this process
traces: the recorder keeps it with the stored event.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.trace import Link, SpanKind
from structlog.typing import EventDict, WrappedLogger

from ddz.config.telemetry import TelemetrySettings

TRACEPARENT = "traceparent"
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_NO_TRACE = "0" * 32

_tracer: trace.Tracer | None = None
"""This process's tracer while tracing is on; None (the default) is tracing off."""
_provider: Any = None


def active() -> bool:
    """Whether this process traces (``configure_tracing`` installed a provider)."""
    return _tracer is not None


def configure_tracing(settings: TelemetrySettings, *, service: str) -> bool:
    """Install the tracer provider and its exporter when ``OTEL_TRACES_EXPORTER`` asks
    for one; nothing at all otherwise. True when tracing is on. Called once per
    process, after ``configure_logging``; ``shutdown_tracing`` flushes at exit."""
    global _tracer, _provider
    if not settings.traces_exporter or _tracer is not None:
        return _tracer is not None
    from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({})  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    name = str(resource.attributes.get(SERVICE_NAME, ""))
    if not name or name.startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: f"ddz-{service}"}))
    if SERVICE_INSTANCE_ID not in resource.attributes:  # as the events' producer says
        instance = f"{service}@{socket.gethostname()}:{os.getpid()}"
        resource = resource.merge(Resource({SERVICE_INSTANCE_ID: instance}))
    provider = TracerProvider(resource=resource)  # the sampler from OTEL_TRACES_SAMPLER
    provider.add_span_processor(BatchSpanProcessor(_exporter(settings)))
    trace.set_tracer_provider(provider)
    _provider = provider
    _tracer = provider.get_tracer("ddz")
    return True


def _exporter(settings: TelemetrySettings) -> Any:
    """The exporter ``OTEL_TRACES_EXPORTER`` names; it reads its endpoint, headers,
    timeout and compression from the environment itself."""
    if settings.traces_exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if settings.traces_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    return HttpExporter()


def shutdown_tracing() -> None:
    """Export what is still queued and stop (a process's last step)."""
    global _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
    _tracer = _provider = None


# -- gRPC ------------------------------------------------------------------------------


def server_interceptors() -> list[Any]:
    """The server span of every call (first: outermost), or none while tracing is off."""
    if _tracer is None:
        return []
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    server = aio_server_interceptor(tracer_provider=_provider, filter_=_not_health())  # type: ignore[no-untyped-call]
    return [server]


def client_interceptors() -> list[Any]:
    """The client span of every call and the ``traceparent`` it sends, or none."""
    if _tracer is None:
        return []
    from opentelemetry.instrumentation.grpc import aio_client_interceptors

    client = aio_client_interceptors(tracer_provider=_provider, filter_=_not_health())  # type: ignore[no-untyped-call]
    return list(client)


def _not_health() -> Any:
    """Health checks (every few seconds, from ``ddz up`` and orchestrators) are not
    traced: they would drown the traces of hands."""
    from opentelemetry.instrumentation.grpc import filters

    return filters.negate(filters.health_check())


# -- spans of our own ------------------------------------------------------------------


def span(name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
    """An internal span under the current one (nothing while tracing is off)."""
    if _tracer is None:
        return contextlib.nullcontext()
    return _tracer.start_as_current_span(name, attributes=attributes)


def new_trace(name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
    """A span that starts a trace of its own, whatever is current: a move a process makes
    on its own account (a bot's), whose task was started inside an earlier message's
    span and would otherwise make a whole hand one trace."""
    if _tracer is None:
        return contextlib.nullcontext()
    from opentelemetry.context import Context

    return _tracer.start_as_current_span(name, context=Context(), attributes=attributes)


def producing(subject: str, messages: int = 1) -> contextlib.AbstractContextManager[Any]:
    """The span of a publish to JetStream, when a span is current (a call, a message
    handled): the messages' ``traceparent`` names it. A publish outside any trace (a
    timer's) starts none and carries no header."""
    if _tracer is None or not trace.get_current_span().get_span_context().is_valid:
        return contextlib.nullcontext()
    attributes: dict[str, Any] = {
        "messaging.system": "nats",
        "messaging.destination.name": subject,
        "messaging.operation.type": "send",
    }
    if messages > 1:
        attributes["messaging.batch.message_count"] = messages
    return _tracer.start_as_current_span(
        f"publish {_destination(subject)}", kind=SpanKind.PRODUCER, attributes=attributes
    )


def inject(headers: MutableMapping[str, str]) -> None:
    """Put the current span's context in a message's headers (no-op while off, or outside
    a span)."""
    if _tracer is not None:
        propagate.inject(headers)


@contextlib.contextmanager
def consuming(durable: str, subject: str, headers: Mapping[str, str] | None) -> Iterator[Any]:
    """Handle one message inside a span that continues its producer's trace (a child of
    the context its headers carry; a trace of its own when they carry none)."""
    if _tracer is None:
        yield None
        return
    parent = propagate.extract(headers or {})
    with _tracer.start_as_current_span(
        f"process {_destination(subject)}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes=_consumer_attributes(durable, subject),
    ) as current:
        yield current


@contextlib.contextmanager
def consuming_batch(durable: str, headers: Sequence[Mapping[str, str] | None]) -> Iterator[Any]:
    """Handle a batch of messages inside one span of its own, linked to each message's
    producer span (a span has one parent; the batch serves many)."""
    if _tracer is None:
        yield None
        return
    links = [Link(context) for context in _contexts(headers)]
    with _tracer.start_as_current_span(
        f"process {durable} batch",
        kind=SpanKind.CONSUMER,
        links=links,
        attributes={
            "messaging.system": "nats",
            "messaging.consumer.group.name": durable,
            "messaging.batch.message_count": len(headers),
        },
    ) as current:
        yield current


def message_span(durable: str, subject: str, headers: Mapping[str, str] | None) -> Any:
    """A started span, child of one message's producer, linked to the current (batch)
    span: the message's hop in its producer's trace. The caller ends it (``end()``);
    None while off or when the message carries no context."""
    if _tracer is None or not headers or TRACEPARENT not in headers:
        return None
    batch = trace.get_current_span().get_span_context()
    return _tracer.start_span(
        f"process {_destination(subject)}",
        context=propagate.extract(headers),
        kind=SpanKind.CONSUMER,
        links=[Link(batch)] if batch.is_valid else None,
        attributes=_consumer_attributes(durable, subject),
    )


def _contexts(headers: Iterable[Mapping[str, str] | None]) -> Iterator[trace.SpanContext]:
    for carried in headers:
        if carried and TRACEPARENT in carried:
            context = trace.get_current_span(propagate.extract(carried)).get_span_context()
            if context.is_valid:
                yield context


def _consumer_attributes(durable: str, subject: str) -> dict[str, Any]:
    return {
        "messaging.system": "nats",
        "messaging.destination.name": subject,
        "messaging.consumer.group.name": durable,
        "messaging.operation.type": "process",
    }


def _destination(subject: str) -> str:
    """A span name of low cardinality: the subject without its bucket and id
    (``ddz.v1.hand.play_made``)."""
    parts = subject.split(".")
    if len(parts) >= 6:
        return ".".join([*parts[:-3], parts[-1]])
    return subject


# -- what a message or a log line carries -----------------------------------------------


def trace_id_of(headers: Mapping[str, str] | None) -> str | None:
    """The trace id (32 hex digits) of a message's W3C ``traceparent`` header, if it has a
    valid one; read whether or not this process traces."""
    if not headers:
        return None
    value = headers.get(TRACEPARENT)
    if not value:
        return None
    found = _TRACEPARENT.match(value.strip().lower())
    if found is None or found.group(1) == _NO_TRACE:
        return None
    return found.group(1)


def add_trace_ids(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    """structlog processor: ``trace_id`` and ``span_id`` of the span current as the line
    is logged (none outside a span, nothing looked up while tracing is off)."""
    if _tracer is not None:
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            event_dict.setdefault("trace_id", format(context.trace_id, "032x"))
            event_dict.setdefault("span_id", format(context.span_id, "016x"))
    return event_dict
