"""The event envelope: serialised once, by its producer.

    data = envelope_for(stream_id, version, event, causation_id, correlation_id, producer)
    envelope, event = decode_envelope(data)

Those bytes are what NATS carries and the store keeps.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable

from google.protobuf.message import DecodeError

from ddz.domain.hand import Recorded
from ddz.v1 import envelope_pb2

from .errors import CodecError
from .events import decode_event, encode_event, message_name

CONTENT_TYPE = "application/x-protobuf; messageType={}"


def new_event_id() -> str:
    return str(uuid.uuid4())


def envelope_for(
    stream_id: str,
    version: int,
    event: Recorded,
    causation_id: str,
    correlation_id: str,
    producer: str,
    *,
    event_id: str | None = None,
    occurred_at: dt.datetime | None = None,
) -> bytes:
    """The serialised ``EventEnvelope`` of ``event`` at ``version`` of ``stream_id``.

    Serialised here, once: publish and store exactly these bytes (never re-encode an
    envelope to compare or hash it). Pass ``event_id`` to know it without parsing
    (it becomes the ``Nats-Msg-Id``); otherwise a new UUID is used.
    """
    return envelope_and_bytes(
        stream_id, version, event, causation_id, correlation_id, producer,
        event_id=event_id, occurred_at=occurred_at,
    )[1]  # fmt: skip


def envelope_and_bytes(
    stream_id: str,
    version: int,
    event: Recorded,
    causation_id: str,
    correlation_id: str,
    producer: str,
    *,
    event_id: str | None = None,
    occurred_at: dt.datetime | None = None,
    serialise: Callable[[envelope_pb2.EventEnvelope], bytes] = (
        envelope_pb2.EventEnvelope.SerializeToString
    ),
) -> tuple[envelope_pb2.EventEnvelope, bytes]:
    """``envelope_for`` and the message it serialised (for a producer that also
    answers with the envelope: no second parse of its own bytes). ``serialise`` makes
    the bytes of the message (a producer's ``EventSigner.seal``: signed ones)."""
    type_, type_version, payload = encode_event(event)
    envelope = new_envelope(
        stream_id, version, type_, type_version, payload, message_name(type_),
        causation_id=causation_id, correlation_id=correlation_id, producer=producer,
        event_id=event_id, occurred_at=occurred_at,
    )  # fmt: skip
    return envelope, serialise(envelope)


def new_envelope(
    stream_id: str,
    version: int,
    event_type: str,
    type_version: int,
    payload: bytes,
    payload_message: str,
    *,
    causation_id: str,
    correlation_id: str,
    producer: str,
    event_id: str | None = None,
    occurred_at: dt.datetime | None = None,
) -> envelope_pb2.EventEnvelope:
    """The one envelope every stream's events travel in (hand and table streams alike);
    ``payload_message`` is the full protobuf name of the payload's message."""
    envelope = envelope_pb2.EventEnvelope(
        event_id=event_id or new_event_id(),
        stream_id=stream_id,
        stream_version=version,
        type=event_type,
        type_version=type_version,
        causation_id=causation_id,
        correlation_id=correlation_id,
        producer=producer,
        payload=payload,
        content_type=CONTENT_TYPE.format(payload_message),
    )
    if occurred_at is None:
        envelope.occurred_at.FromNanoseconds(time.time_ns())
    else:
        envelope.occurred_at.FromDatetime(occurred_at)
    return envelope


def parse_envelope(data: bytes) -> envelope_pb2.EventEnvelope:
    try:
        envelope: envelope_pb2.EventEnvelope = envelope_pb2.EventEnvelope.FromString(data)
    except DecodeError as exc:
        raise CodecError("not an EventEnvelope") from exc
    return envelope


def decode_envelope(data: bytes) -> tuple[envelope_pb2.EventEnvelope, Recorded]:
    """The envelope and the event it carries."""
    envelope = parse_envelope(data)
    return envelope, decode_event(envelope.type, envelope.type_version, envelope.payload)
