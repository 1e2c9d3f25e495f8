"""Envelopes for the event store's contract tests: any stream, any version, with an
event id of the test's choosing when it matters."""

from __future__ import annotations

import uuid

from ddz.v1.envelope_pb2 import EventEnvelope


def envelope(
    stream_id: str, version: int, *, event_id: str | None = None, body: bytes = b""
) -> bytes:
    message = EventEnvelope(
        event_id=event_id or str(uuid.uuid4()),
        stream_id=stream_id,
        stream_version=version,
        type="CardsPlayed",
        type_version=1,
        causation_id="cause-1",
        correlation_id="corr-1",
        producer="pytest",
        payload=body or f"{stream_id}:{version}".encode(),
        content_type="application/x-protobuf",
    )
    message.occurred_at.FromSeconds(1_700_000_000 + version)
    return message.SerializeToString()


def batch(stream_id: str, start: int, count: int) -> list[bytes]:
    return [envelope(stream_id, version) for version in range(start, start + count)]
