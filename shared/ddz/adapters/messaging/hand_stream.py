"""A hand's stream on the bus: publish its events as its single writer, read it back.

A hand is the stream ``hand-<hand_id>``; its public events go to
``ddz.v1.hand.<bucket>.<hand_id>.<type>`` and hidden ones (``CardsDealt``) to
``ddz.v1.internal.hand.<bucket>.<hand_id>.<type>`` (``ddz.adapters.messaging.subjects``).

Single writer per hand. Every publish sets ``Nats-Msg-Id`` = the event id,
and ``Nats-Expected-Last-Subject-Sequence`` over the filter of the event's own side
(``ddz.v1.hand.<bucket>.<id>.*`` or ``ddz.v1.internal.hand.<bucket>.<id>.*``, via
``Nats-Expected-Last-Subject-Sequence-Subject``; nats-server 2.15 honours a wildcard
there, ``tests/integration/test_services_core.py`` proves it). One filter cannot cover
both sides with these subjects, so the guarantee rests on one more fact, checked in
``publish``: the first event of every decision is public (a hidden deal always follows
``HandStarted`` or ``Redealt``). Two writers that start from the same state therefore
race on the public filter, and exactly one wins; the loser gets ``HandConflict`` and
has published nothing. The store's unique (stream, version) is the second line: a fork
could never be recorded.

JetStream checks the expected sequence before it deduplicates, so a publish retried
after a lost acknowledgement fails the check; ``publish`` then looks at the last
message on the filter, and if it is this very event id the retry was a success.

A decision of several events (the deal; the bid that ends the bidding; the play that
ends the hand, with its settlement and the seed) is one atomic batch when the stream
allows it (nats-server >= 2.12, ``allow_atomic``, set by ``EventBus.ensure_stream``):
stored all at once, at consecutive sequences, or not at all, so a crash or a lost
connection between two of its events cannot leave half a decision on the bus. Each
side's first event carries the side's expected sequence (the server checks a batch
against the stream as it was before it). On an older server the events go one by one.

The bus keeps events for a while only (``DDZ_STREAM_MAX_AGE``, ``DDZ_STREAM_MAX_BYTES``:
the oldest go first), the recorder's store keeps them for good. ``read`` of a hand whose
first events are gone from the bus takes them from a ``HandArchive`` (the store) when it
is given one, and otherwise refuses with ``HandAgedOut`` (NOT_FOUND), never a hand with
its head missing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol, TypeVar

import nats.errors
import nats.js.errors
import structlog

from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import BatchMessage
from ddz.adapters.messaging.election import RIDE_OUT, UNANSWERED, until_answered
from ddz.adapters.messaging.server import MSG_ID, BatchDuplicate, WrongLastSequence
from ddz.adapters.messaging.subjects import stream_filter, stream_id_for, subject_for
from ddz.adapters.security.event_signing import BadEvent, EventKeyring, EventSigner, sealed_envelope
from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.event_store import EventStore
from ddz.domain.hand import Recorded
from ddz.v1 import envelope_pb2

log = structlog.get_logger("ddz.hand_stream")

HAND = "hand"
PUBLISH_ATTEMPTS = 3
T = TypeVar("T")


class HandAgedOut(Refusal):
    """The hand's first events are no longer on the bus (its retention limits dropped
    them) and no archive was given to read them from: NOT_FOUND, UNKNOWN_HAND."""

    def __init__(self, hand_id: str, first_version: int) -> None:
        super().__init__(
            Kind.NOT_FOUND,
            Reason.UNKNOWN_HAND,
            f"hand {hand_id!r} is older than the bus keeps (its events before version "
            f"{first_version} aged out of JetStream); the recorder's store has it",
            hand_id=hand_id,
        )
        self.hand_id = hand_id


class HandArchive(Protocol):
    """Where the events of a hand that aged out of the bus are read: the store."""

    async def envelopes(self, stream_id: str) -> Sequence[bytes]:
        """The stream's envelopes as published, in version order (none: unknown)."""
        ...


class StoreArchive:
    """The ``HandArchive`` of the recorder's event store."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def envelopes(self, stream_id: str) -> Sequence[bytes]:
        stored = await asyncio.to_thread(self.store.read_stream, stream_id, 0)
        return [event.envelope for event in stored]


class HandConflict(Exception):
    """Another writer extended the hand first (reason VERSION_CONFLICT)."""


def hand_stream_id(hand_id: str) -> str:
    """``hand-<hand_id>``; ``ValueError`` when ``hand_id`` is not a subject token."""
    return stream_id_for(HAND, hand_id)


@dataclass(frozen=True, slots=True)
class HandCursor:
    """Where a hand's stream stands: its version (every recorded event, rejections
    included) and the JetStream sequence of the last public and last hidden message."""

    version: int = 0
    public_seq: int = 0
    internal_seq: int = 0

    def after(self, hidden: bool, seq: int) -> HandCursor:
        sides = (self.public_seq, seq) if hidden else (seq, self.internal_seq)
        return HandCursor(self.version + 1, *sides)  # (``dataclasses.replace``: 2x slower)


@dataclass(frozen=True, slots=True)
class PublishedEvent:
    event: Recorded
    event_id: str
    version: int
    envelope: bytes
    hidden: bool
    seq: int
    message: envelope_pb2.EventEnvelope  # ``envelope`` parsed (the very message serialised)


async def publish(
    bus: EventBus,
    hand_id: str,
    cursor: HandCursor,
    events: Sequence[Recorded],
    *,
    causation_id: str,
    correlation_id: str,
    producer: str,
    signer: EventSigner,
    timeout: float = 5.0,
) -> tuple[HandCursor, list[PublishedEvent]]:
    """Publish ``events`` as the next versions of the hand, each checked against the
    sequence the writer last saw and signed by ``signer`` (``ddz.adapters.security.event_signing``).
    ``HandConflict`` if someone else got there first."""
    if events and events[0].HIDDEN:
        raise ValueError("a decision's first event must be public (see module docstring)")
    stream_id = hand_stream_id(hand_id)
    outgoing = [
        _Outgoing(event, *sealed_envelope(
            signer, stream_id, cursor.version + offset, event, causation_id, correlation_id,
            producer,
        ))
        for offset, event in enumerate(events, 1)
    ]  # fmt: skip
    if len(outgoing) > 1 and await bus.atomic_batches():
        seqs = await _publish_atomic(bus, stream_id, cursor, outgoing, timeout)
    else:
        seqs = await _publish_one_by_one(bus, stream_id, cursor, outgoing, timeout)
    published: list[PublishedEvent] = []
    for out, seq in zip(outgoing, seqs, strict=True):
        hidden = out.event.HIDDEN
        cursor = cursor.after(hidden, seq)
        published.append(
            PublishedEvent(
                out.event, out.event_id, cursor.version, out.data, hidden, seq, out.message
            )
        )
    return cursor, published


class _Outgoing(NamedTuple):
    """An event of the decision being published, with its envelope built."""

    event: Recorded
    message: envelope_pb2.EventEnvelope
    data: bytes

    @property
    def event_id(self) -> str:
        return self.message.event_id


async def _publish_one_by_one(
    bus: EventBus, stream_id: str, cursor: HandCursor, outgoing: list[_Outgoing], timeout: float
) -> list[int]:
    """Each event checked against its side's sequence as the previous ones left it."""
    seqs = []
    for out in outgoing:
        hidden = out.event.HIDDEN
        seq = await _publish_checked(
            bus,
            subject_for(stream_id, out.event.TYPE, internal=hidden),
            out.data,
            out.event_id,
            cursor.internal_seq if hidden else cursor.public_seq,
            stream_filter(stream_id, internal=hidden),
            timeout,
        )
        cursor = cursor.after(hidden, seq)
        seqs.append(seq)
    return seqs


async def _publish_atomic(
    bus: EventBus, stream_id: str, cursor: HandCursor, outgoing: list[_Outgoing], timeout: float
) -> list[int]:
    """A decision of several events in one atomic batch: all of them or none, so no
    reader ever sees half a decision (the last play without the end of the hand). The
    first event of each side carries that side's expected sequence."""
    checked: set[bool] = set()
    batch = []
    for out in outgoing:
        hidden = out.event.HIDDEN
        expected = subject_filter = None
        if hidden not in checked:
            checked.add(hidden)
            expected = cursor.internal_seq if hidden else cursor.public_seq
            subject_filter = stream_filter(stream_id, internal=hidden)
        batch.append(
            BatchMessage(
                subject_for(stream_id, out.event.TYPE, internal=hidden),
                out.data,
                out.event_id,
                expected,
                subject_filter,
            )
        )
    # A retry of a batch that was stored (its acknowledgement lost) is refused both
    # ways; then the batch's last event is the last message of its side.
    last_filter = stream_filter(stream_id, internal=outgoing[-1].event.HIDDEN)

    async def send(seconds: float) -> list[int]:
        return await bus.publish_batch(batch, timeout=seconds)

    async def ours(seconds: float) -> list[int] | None:
        seq = await _last_if_ours(bus, last_filter, outgoing[-1].event_id, seconds)
        return None if seq is None else list(range(seq - len(batch) + 1, seq + 1))

    return await _retried(send, ours, (WrongLastSequence, BatchDuplicate), timeout)


async def _publish_checked(
    bus: EventBus,
    subject: str,
    data: bytes,
    event_id: str,
    expected: int,
    subject_filter: str,
    timeout: float,
    *,
    ride_out: bool = False,
) -> int:
    async def send(seconds: float) -> int:
        ack = await bus.publish(
            subject, data, event_id, expected, expected_subject=subject_filter, timeout=seconds
        )
        return ack.seq

    async def ours(seconds: float) -> int | None:
        return await _last_if_ours(bus, subject_filter, event_id, seconds)

    return await _retried(send, ours, (WrongLastSequence,), timeout, ride_out=ride_out)


async def _retried(
    send: Callable[[float], Awaitable[T]],
    ours: Callable[[float], Awaitable[T | None]],
    refused: tuple[type[Exception], ...],
    timeout: float,
    *,
    ride_out: bool = False,
) -> T:
    """``send()``, again while it gets no answer (``election.until_answered``): up to
    ``PUBLISH_ATTEMPTS`` times, or with ``ride_out`` until ``election.RIDE_OUT`` seconds
    have passed, long enough for the stream to elect a new leader. A refusal is a
    success when ``ours()`` finds what was sent already stored (an earlier attempt was
    stored and its answer lost), else ``HandConflict``. Still no answer: UNAVAILABLE
    (the stream has no leader yet, e.g. just after a node came back), which callers ask
    again, never an internal error."""
    if ride_out:
        until, attempts = time.monotonic() + RIDE_OUT, None
    else:
        until, attempts = time.monotonic() + PUBLISH_ATTEMPTS * timeout, PUBLISH_ATTEMPTS
    try:
        try:
            return await until_answered(send, until=until, timeout=timeout, attempts=attempts)
        except refused as exc:
            found = await until_answered(ours, until=until, timeout=timeout, attempts=attempts)
            if found is not None:
                return found
            raise HandConflict(str(exc)) from exc
    except UNANSWERED as exc:
        why = str(exc) or type(exc).__name__
        raise Refusal.unavailable(f"the bus did not take the events: {why}") from exc


async def _last_if_ours(
    bus: EventBus, subject_filter: str, event_id: str, timeout: float
) -> int | None:
    """The sequence of the last message on ``subject_filter`` if it is ``event_id``."""
    try:
        async with asyncio.timeout(timeout):
            msg = await bus.js.get_last_msg(bus.stream, subject_filter)
    except nats.js.errors.NotFoundError:
        return None
    if (msg.headers or {}).get(MSG_ID) == event_id:
        return int(msg.seq or 0)
    return None


@dataclass(frozen=True, slots=True)
class ReadEvent:
    envelope: envelope_pb2.EventEnvelope
    event: Recorded
    data: bytes
    seq: int
    hidden: bool


READ_PASSES = 3
"""How often ``read`` reads a hand whose versions have a hole before it believes it."""


async def read(
    bus: EventBus, hand_id: str, archive: HandArchive | None = None, *, keyring: EventKeyring
) -> tuple[list[ReadEvent], HandCursor]:
    """Every event of the hand in stream order, straight from JetStream (the writer's
    source of truth; the store may lag behind it), and the cursor after the last. Each
    is verified with ``keyring``: one not signed by a producer allowed to sign it (a
    forgery by someone with NATS credentials but no producer's key) is logged and left
    out; the cursor still counts its sequence, so the hand's writer goes on after it.

    Events the bus no longer has (older than its retention) come from ``archive``, with
    sequence 0; without one such a hand is ``HandAgedOut``. A hand neither has: none."""
    for attempt in range(READ_PASSES):
        found, cursor = await _read_bus(bus, hand_id, keyring)
        versions = [e.envelope.stream_version for e in found]
        if versions == list(range(1, len(found) + 1)) or attempt == READ_PASSES - 1:
            break
        # The public and the internal subjects are read one after the other: a write that
        # landed between the two passes leaves a hole at the head or in the middle.
    first = found[0].envelope.stream_version if found else None
    if first != 1 and (archive is not None or first is not None):
        found = await _with_archived_head(hand_id, found, archive, keyring)
    versions = [e.envelope.stream_version for e in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"hand {hand_id}: stream versions on the bus are {versions}")
    return found, replace(cursor, version=len(found))


async def _read_bus(
    bus: EventBus, hand_id: str, keyring: EventKeyring
) -> tuple[list[ReadEvent], HandCursor]:
    """What the bus has of the hand, public and internal subjects, in stream order."""
    stream_id = hand_stream_id(hand_id)
    found: list[ReadEvent] = []
    cursor = HandCursor()
    for hidden in (False, True):
        subject_filter = stream_filter(stream_id, internal=hidden)
        # The side's last message first: the messages before it are read up to it, and
        # no read ends on "not found" (a new hand's side is one message: one read).
        try:
            head = await bus.js.get_last_msg(bus.stream, subject_filter)
        except nats.js.errors.NotFoundError:
            continue  # nothing on this side: its sequence stays 0
        last, messages, seq = int(head.seq or 0), [], 1
        while seq < last:
            try:
                msg = await bus.js.get_msg(bus.stream, seq, subject=subject_filter, next=True)
            except nats.js.errors.NotFoundError:
                break
            if int(msg.seq or 0) >= last:
                break
            messages.append(msg)
            seq = int(msg.seq or 0) + 1
        messages.append(head)
        for msg in messages:
            data = msg.data or b""
            try:
                envelope, event = keyring.decode(data)
            except BadEvent as exc:
                log.error("event_refused", hand_id=hand_id, seq=msg.seq, why=exc.why,
                          reason=str(exc))  # fmt: skip
                continue
            found.append(ReadEvent(envelope, event, data, int(msg.seq or 0), hidden))
        cursor = replace(cursor, **{"internal_seq" if hidden else "public_seq": last})
    found.sort(key=lambda e: e.seq)
    return found, cursor


async def _with_archived_head(
    hand_id: str, found: list[ReadEvent], archive: HandArchive | None, keyring: EventKeyring
) -> list[ReadEvent]:
    """``found`` (what the bus still has of the hand, maybe nothing) after the events
    before it, from ``archive``."""
    first = found[0].envelope.stream_version if found else None
    if archive is None:
        raise HandAgedOut(hand_id, first or 1)
    head: list[ReadEvent] = []
    for data in await archive.envelopes(hand_stream_id(hand_id)):
        envelope, event = keyring.decode(data)
        if first is not None and envelope.stream_version >= first:
            break
        head.append(ReadEvent(envelope, event, data, 0, event.HIDDEN))
    if first is not None and len(head) != first - 1:
        raise HandAgedOut(hand_id, first)  # the store lags behind: not there either
    return head + found


class JetStreamHandLog:
    """A hand's stream as the rules and the dealer use it: read it whole, extend it under
    the single-writer check, or start it; another writer's win is a CONFLICT ``Refusal``.
    It signs what it publishes with ``signer`` and verifies what it reads with ``keyring``."""

    def __init__(self, bus: EventBus, signer: EventSigner, keyring: EventKeyring) -> None:
        self.bus = bus
        self.signer = signer
        self.keyring = keyring

    async def read(self, hand_id: str) -> tuple[Sequence[Recorded], HandCursor]:
        try:
            hand_stream_id(hand_id)
        except ValueError:
            return [], HandCursor()  # not even a possible hand id: no hand
        found, cursor = await read(self.bus, hand_id, keyring=self.keyring)
        return [event.event for event in found], cursor

    async def append(
        self,
        hand_id: str,
        after: HandCursor,
        recorded: Sequence[Recorded],
        *,
        causation_id: str,
        correlation_id: str,
        producer: str,
    ) -> tuple[HandCursor, list[envelope_pb2.EventEnvelope]]:
        """Publish ``recorded`` after ``after``; the new cursor and the public envelopes."""
        try:
            cursor, published = await publish(
                self.bus, hand_id, after, recorded,
                causation_id=causation_id, correlation_id=correlation_id, producer=producer,
                signer=self.signer,
            )  # fmt: skip
        except HandConflict as exc:
            raise Refusal.conflict(str(exc)) from None
        return cursor, [p.message for p in published if not p.hidden]

    async def start(
        self,
        hand_id: str,
        events: Sequence[Recorded],
        *,
        causation_id: str,
        correlation_id: str,
        producer: str,
    ) -> tuple[int, list[envelope_pb2.EventEnvelope]]:
        """Publish a new hand's first events. Its stream must be empty, or hold the
        beginning of these very events published for the same ``causation_id`` (the
        request): an earlier attempt whose answer was lost, or that died part-way, is
        finished rather than refused, so a retried deal answers as the first would
        have. Anything else on the stream is a CONFLICT ``Refusal``. Two attempts at
        once (a retry sent while the first is still under way) are one deal: the one
        that loses the race finds the winner's events, which are its own."""
        ids = {"causation_id": causation_id, "correlation_id": correlation_id, "producer": producer}
        if await self.bus.atomic_batches():  # a new hand's stream is almost always empty:
            try:  # published first (all or nothing, against empty sides), read if refused
                cursor, public = await self.append(hand_id, HandCursor(), events, **ids)
                return cursor.version, public
            except Refusal as refusal:
                if refusal.kind is not Kind.CONFLICT:
                    raise
        for race in (False, True):
            found, cursor = await read(self.bus, hand_id, keyring=self.keyring)
            if found:
                earlier = [e.event for e in found[: len(events)]]
                if found[0].envelope.causation_id != causation_id or earlier != list(
                    events[: len(earlier)]
                ):
                    raise Refusal.conflict(f"hand {hand_id} already has events of another request")
            ahead = [e.envelope for e in found[: len(events)] if not e.hidden]
            if len(found) >= len(events):
                return len(events), ahead
            try:
                cursor, public = await self.append(hand_id, cursor, events[len(found) :], **ids)
            except Refusal as refusal:
                if race or refusal.kind is not Kind.CONFLICT:
                    raise
                continue  # published meanwhile: by this request, or by another?
            return cursor.version, ahead + public
        raise AssertionError("unreachable")  # the second attempt returned or raised
