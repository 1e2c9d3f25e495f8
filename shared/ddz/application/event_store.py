"""The event store's contract, the port the use cases store and read events through:
what every backend promises (after eventsourcing's ``ApplicationRecorder``;
``ddz.adapters.store.sql.SqlEventStore`` is the one backend).
``tests/integration/test_store_contract.py`` holds every backend to it.

Streams are numbered from version 1; ``expected_version=0`` appends to a new stream.
The store is append-only: there is no update or delete in this interface, and the
database refuses them too.
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ddz.v1 import envelope_pb2

GENESIS_HASH = "0" * 64
"""``prev_hash`` of the first event of every stream."""

ED25519 = "ed25519"
"""Algorithm of the signatures made now: Ed25519 over ``head_message``, in hex."""
HMAC_SHA256 = "hmac-sha256"
"""Algorithm of the signatures made before Ed25519: HMAC-SHA256 over ``head_message``."""


class StoreError(Exception):
    """Base class of the store's own errors."""


class VersionConflict(StoreError):
    """The stream is not at the version the writer expected: someone else extended it."""

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream_id!r} is at version {actual}, expected {expected}")
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual


class DuplicateEventId(StoreError):
    """An event id already stored with different bytes: a bug or a forgery, never a retry."""

    def __init__(self, event_id: str) -> None:
        super().__init__(f"event id {event_id!r} is already stored with different content")
        self.event_id = event_id


class InvalidEnvelope(StoreError, ValueError):
    """Bytes that are not an envelope of the stream and version they were appended at."""


class UnknownStream(StoreError, LookupError):
    """A stream with no events."""

    def __init__(self, stream_id: str) -> None:
        super().__init__(f"stream {stream_id!r} has no events")
        self.stream_id = stream_id


class SignatureConflict(StoreError):
    """The same head was already signed under the same key id with another signature."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One row of the store. ``envelope`` and ``payload`` are the bytes as published."""

    position: int
    event_id: str
    stream_id: str
    stream_version: int
    type: str
    type_version: int
    occurred_at: dt.datetime | None
    causation_id: str
    correlation_id: str
    producer: str
    payload: bytes
    envelope: bytes
    prev_hash: str
    hash: str
    # The trace of the message that brought it (docs/OPERATIONS.md "Traces"); outside
    # the envelope and the hash chain. None: stored untraced, or before traces were kept.
    trace_id: str | None = None

    def to_proto(self) -> envelope_pb2.StoredEvent:
        return envelope_pb2.StoredEvent(
            envelope=self.envelope,
            position=self.position,
            prev_hash=self.prev_hash,
            hash=self.hash,
            trace_id=self.trace_id or "",
        )

    def parse_envelope(self) -> envelope_pb2.EventEnvelope:
        envelope: envelope_pb2.EventEnvelope = envelope_pb2.EventEnvelope.FromString(self.envelope)
        return envelope


@dataclass(frozen=True, slots=True)
class StreamSignature:
    """A signed chain head: the stream up to ``head_version`` ends in ``head_hash``,
    signed with ``algorithm`` (``ED25519``, or ``HMAC_SHA256`` for hands
    recorded before Ed25519) by the key named ``key_id``."""

    stream_id: str
    head_version: int
    head_hash: str
    signature: str
    key_id: str
    algorithm: str = HMAC_SHA256


class HeadSigner(Protocol):
    """What a head is signed with (``ddz.adapters.store.keys``)."""

    @property
    def algorithm(self) -> str: ...
    @property
    def key_id(self) -> str: ...
    def sign(self, stream_id: str, head_version: int, head_hash: str) -> str: ...


@dataclass(frozen=True, slots=True)
class Append:
    """One stream's part of ``EventStore.append_streams``: what ``append`` takes."""

    stream_id: str
    expected_version: int
    envelopes: Sequence[bytes]
    trace_ids: Sequence[str | None] | None = None


class EventStore(abc.ABC):
    """Append-only event store. Methods are synchronous and thread-safe; call them
    from async code with ``asyncio.to_thread``."""

    @abc.abstractmethod
    def append(
        self,
        stream_id: str,
        expected_version: int,
        envelopes: Sequence[bytes],
        trace_ids: Sequence[str | None] | None = None,
    ) -> list[StoredEvent]:
        """Append serialised EventEnvelopes to a stream, all or nothing.

        ``trace_ids``, one per envelope when given: the trace each arrived in, kept
        beside it (``StoredEvent.trace_id``; an event stored already keeps its own).

        Envelope ``i`` must carry ``stream_id`` and version ``expected_version + i + 1``
        (else ``InvalidEnvelope``). An envelope whose event id is already stored with
        identical bytes is not stored again: the stored record is returned (so a
        redelivered batch is a no-op). Raises ``VersionConflict`` when the new events
        would not directly follow the stream's current version, ``DuplicateEventId``
        when an event id is stored with different bytes. Returns one record per
        envelope, in order.
        """

    def append_streams(self, appends: Sequence[Append]) -> list[list[StoredEvent]]:
        """``append`` each of several streams, together: a backend that can stores them
        in one transaction (all of them or, on any error, none; ``SqlEventStore``), this
        default one after the other (on an error, the streams before it are stored).
        Raises what ``append`` raises; a caller that must know which stream failed
        appends them one by one after the error, which is safe either way (``append`` of
        a stored batch is a no-op). One list of records per stream, in order."""
        return [
            self.append(a.stream_id, a.expected_version, a.envelopes, a.trace_ids) for a in appends
        ]

    @abc.abstractmethod
    def read_stream(self, stream_id: str, after_version: int = 0) -> list[StoredEvent]:
        """The stream's events with version > ``after_version``, in version order."""

    @abc.abstractmethod
    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """Up to ``limit`` events with position > ``after_position``, in position order.

        A reader that pages with the last position it saw never misses an event:
        positions become visible in increasing order.
        """

    @abc.abstractmethod
    def max_position(self) -> int:
        """The highest position stored (0 when empty)."""

    @abc.abstractmethod
    def stream_version(self, stream_id: str) -> int:
        """The stream's current version (0 when it has no events)."""

    @abc.abstractmethod
    def stream_ids(self) -> list[str]:
        """Every stream id, in the order the streams were started."""

    @abc.abstractmethod
    def sign_head(
        self, stream_id: str, key: HeadSigner | bytes, key_id: str = ""
    ) -> StreamSignature:
        """Sign the stream's current head with ``key`` and store the signature.

        ``key``: a ``HeadSigner`` (the recorder's Ed25519 key), or the bytes of an HMAC
        key named ``key_id`` (how hands were signed before Ed25519; kept to make such
        records). Signing the same head again with the same key is a no-op returning
        the stored signature; under the same key id with another key, ``SignatureConflict``.
        Raises ``UnknownStream`` for a stream without events.
        """

    @abc.abstractmethod
    def read_signatures(self, stream_id: str) -> list[StreamSignature]:
        """The stream's stored head signatures, oldest first."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections."""
