"""The event bus: NATS JetStream, one stream ``DDZ`` over ``ddz.v1.>``.

Subjects (versioned; one token per level, no dots inside tokens):

    ddz.v1.<category>.<id>.<EventType>           public, e.g. ddz.v1.hand.<hand_id>.play_made
    ddz.v1.internal.<category>.<id>.<EventType>  every seat's cards (cards_dealt)

Stream ids are ``<category>-<id>`` (``hand-7f3a…``, ``table-12``); ``subject_for`` maps
one to the other. Publishing sets ``Nats-Msg-Id`` to the event id so JetStream drops
duplicates within the stream's duplicate window; consumers are durable, created
explicitly (``add_consumer``), pulled, and a message is acked only after the handler
returned, so a crash means redelivery, never loss. Handlers must be idempotent on the
event id (the store is: an identical event id is a no-op).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import nats
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig

STREAM_NAME = "DDZ"
SUBJECT_ROOT = "ddz.v1"
ALL_SUBJECTS = f"{SUBJECT_ROOT}.>"
INTERNAL = "internal"
MSG_ID = "Nats-Msg-Id"
EXPECTED_LAST_SUBJECT_SEQUENCE = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"
WRONG_LAST_SEQUENCE_ERR = 10071  # JSStreamWrongLastSequenceErr
BATCH_ID = "Nats-Batch-Id"
BATCH_SEQUENCE = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
BATCH_DUPLICATE_MSG_ID_ERR = 10201  # JSAtomicPublishContainsDuplicateMessageErr
MIN_SERVER_VERSION = (2, 11, 0)
"""The oldest nats-server the suite runs on: the single-writer check over a hand's wildcard
filter needs ``Nats-Expected-Last-Subject-Sequence-Subject`` (2.11). An older server
ignores that header and checks the event's own subject instead: it refuses a hand's second
event and lets a stale writer through."""

_STREAM_ID = re.compile(r"^([a-z][a-z_]*)-([A-Za-z0-9_-]+)$")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")

log = structlog.get_logger("ddz.bus")


class BusError(Exception):
    """Base class of the bus's own errors."""


class WrongLastSequence(BusError):
    """``Nats-Expected-Last-Subject-Sequence`` did not hold: someone else published first."""


class BatchDuplicate(BusError):
    """An atomic batch held an event id the stream already has: it was stored before
    (a retry after a lost acknowledgement), or the ids are not unique."""


class UnsupportedServer(BusError, ValueError):
    """The NATS server is older than ``MIN_SERVER_VERSION`` (a configuration error)."""


def check_server_version(version: tuple[int, int, int], where: str = "") -> None:
    """``UnsupportedServer`` when ``version`` (major, minor, patch) is too old."""
    if version < MIN_SERVER_VERSION:
        found = ".".join(map(str, version))
        need = ".".join(map(str, MIN_SERVER_VERSION))
        at = f" at {where}" if where else ""
        raise UnsupportedServer(
            f"nats-server {found}{at} is too old: the suite needs {need} or later "
            f"(the per-hand Nats-Expected-Last-Subject-Sequence-Subject check)"
        )


class Reject(Exception):
    """Raise from a handler for a message that can never be processed (it is terminated
    at once, not redelivered). Any other exception means "try again later"."""


def stream_parts(stream_id: str) -> tuple[str, str]:
    """``("hand", "7f3a")`` for ``"hand-7f3a"``."""
    match = _STREAM_ID.match(stream_id)
    if not match:
        raise ValueError(
            f"stream id {stream_id!r} must look like <category>-<id> "
            "(category a-z_, id letters, digits, _ or -)"
        )
    return match.group(1), match.group(2)


def stream_id_for(category: str, entity_id: str) -> str:
    stream_id = f"{category}-{entity_id}"
    stream_parts(stream_id)
    return stream_id


def subject_for(stream_id: str, event_type: str, internal: bool = False) -> str:
    """The subject an event of ``stream_id`` is published on."""
    if not _TOKEN.match(event_type):
        raise ValueError(f"event type {event_type!r} is not a valid subject token")
    return f"{stream_filter(stream_id, internal)[:-1]}{event_type}"


def stream_filter(stream_id: str, internal: bool = False) -> str:
    """The subject filter of every public (or internal) event of one stream."""
    category, entity_id = stream_parts(stream_id)
    prefix = f"{SUBJECT_ROOT}.{INTERNAL}" if internal else SUBJECT_ROOT
    return f"{prefix}.{category}.{entity_id}.*"


def category_filter(category: str, internal: bool = False) -> str:
    """The subject filter of every public (or internal) event of a category."""
    prefix = f"{SUBJECT_ROOT}.{INTERNAL}" if internal else SUBJECT_ROOT
    return f"{prefix}.{category}.*.*"


@dataclass(frozen=True, slots=True)
class SubjectParts:
    stream_id: str
    event_type: str
    internal: bool


def parse_subject(subject: str) -> SubjectParts:
    """Inverse of ``subject_for``."""
    tokens = subject.split(".")
    internal = len(tokens) == 6 and tokens[2] == INTERNAL
    if internal:
        del tokens[2]
    if len(tokens) != 5 or ".".join(tokens[:2]) != SUBJECT_ROOT:
        raise ValueError(f"not a ddz event subject: {subject!r}")
    return SubjectParts(stream_id_for(tokens[2], tokens[3]), tokens[4], internal)


@dataclass(frozen=True, slots=True)
class Published:
    """JetStream's answer to a publish: the stream sequence, and whether it was a duplicate."""

    seq: int
    duplicate: bool


@dataclass(frozen=True, slots=True)
class BatchMessage:
    """One message of an atomic batch. ``expected_last_subject_seq`` (with its filter
    ``expected_subject``) is checked against the stream as it was before the batch, so
    only the first message of each filter's side should carry it."""

    subject: str
    envelope: bytes
    event_id: str
    expected_last_subject_seq: int | None = None
    expected_subject: str | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message handed to a durable subscription's handler."""

    subject: str
    data: bytes
    headers: Mapping[str, str]
    stream_seq: int
    num_delivered: int

    @property
    def event_id(self) -> str:
        return self.headers.get(MSG_ID, "")


Handler = Callable[[Delivery], Awaitable[None]]


@dataclass(eq=False)
class DurableSubscription:
    """A running fetch loop over a durable pull consumer. ``await stop()`` ends it."""

    durable: str
    _task: asyncio.Task[None] | None = None
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _fetching: bool = False

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Finish the message in hand, hand back the rest of the batch, stop fetching."""
        self._stopping.set()
        if self._task is None:
            return
        if self._fetching:
            self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


class EventBus:
    """A connection to NATS with the ``DDZ`` JetStream stream."""

    def __init__(self, nc: Client, stream: str = STREAM_NAME) -> None:
        self.nc = nc
        self.js: JetStreamContext = nc.jetstream()
        self.stream = stream
        self._subscriptions: list[DurableSubscription] = []
        # Publish a decision of several events as one atomic batch when the stream
        # allows it (DDZ_ATOMIC_DECISIONS; docs/DECISIONS.md says what it costs).
        self.atomic_decisions = True
        self._atomic: bool | None = None  # the stream allows atomic batches (asked once)

    @classmethod
    async def connect(
        cls, url: str, *, name: str | None = None, stream: str = STREAM_NAME, **options: Any
    ) -> EventBus:
        """Connect (reconnecting forever on a dropped connection)."""
        options.setdefault("max_reconnect_attempts", -1)
        options.setdefault("reconnect_time_wait", 0.5)
        nc = await nats.connect(url, name=name, **options)
        return cls(nc, stream)

    async def close(self) -> None:
        """Stop every subscription started here, flush and close the connection."""
        for subscription in self._subscriptions:
            await subscription.stop()
        self._subscriptions.clear()
        if not self.nc.is_closed:
            with contextlib.suppress(nats.errors.Error, TimeoutError):
                await self.nc.flush(timeout=2)  # acks and publishes still in the buffer
            await self.nc.close()

    async def ensure_stream(
        self,
        *,
        duplicate_window: float = 120.0,
        max_age: float | None = None,
        storage: StorageType = StorageType.FILE,
    ) -> None:
        """Create the stream, or bring an existing one to this configuration.

        Atomic batch publishing is asked for (nats-server >= 2.12); an older server
        ignores the field, and ``atomic_batches`` then says no. A server older than
        ``MIN_SERVER_VERSION`` is refused (``UnsupportedServer``)."""
        server = self.nc.connected_server_version
        url = self.nc.connected_url
        check_server_version(
            (server.major, server.minor, server.patch),
            url.geturl() if url is not None else "",
        )
        config = StreamConfig(
            name=self.stream,
            subjects=[ALL_SUBJECTS],
            storage=storage,
            duplicate_window=duplicate_window,
            max_age=max_age,
            allow_atomic=True,
        )
        try:
            await self.js.add_stream(config)
        except nats.js.errors.BadRequestError:
            # Exists with another configuration (e.g. an older duplicate window).
            await self.js.update_stream(config)

    async def publish(
        self,
        subject: str,
        envelope: bytes,
        event_id: str,
        expected_last_subject_seq: int | None = None,
        *,
        expected_subject: str | None = None,
        timeout: float | None = None,
    ) -> Published:
        """Publish the envelope bytes with ``Nats-Msg-Id = event_id``.

        ``expected_last_subject_seq``: JetStream accepts the message only when the last
        message on ``subject`` (or, with ``expected_subject``, on that filter, e.g.
        ``stream_filter(stream_id)``) has this stream sequence (0: none yet); else
        ``WrongLastSequence``. A duplicate event id is acknowledged with
        ``duplicate=True`` and not stored again.
        """
        if not event_id:
            raise ValueError("every published event needs its event id")
        headers = {MSG_ID: event_id}
        if expected_last_subject_seq is not None:
            headers[EXPECTED_LAST_SUBJECT_SEQUENCE] = str(expected_last_subject_seq)
            if expected_subject is not None:
                headers[EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT] = expected_subject
        try:
            ack = await self.js.publish(
                subject, envelope, timeout=timeout, stream=self.stream, headers=headers
            )
        except nats.js.errors.APIError as exc:
            if exc.err_code == WRONG_LAST_SEQUENCE_ERR:
                raise WrongLastSequence(
                    f"{subject}: expected last sequence {expected_last_subject_seq}: "
                    f"{exc.description}"
                ) from exc
            raise
        return Published(seq=ack.seq, duplicate=bool(ack.duplicate))

    async def atomic_batches(self) -> bool:
        """Whether decisions go out as atomic batches: wanted here (``atomic_decisions``)
        and allowed by the stream, which then stores a batch all at once or not at all."""
        if not self.atomic_decisions:
            return False
        if self._atomic is None:
            info = await self.js.stream_info(self.stream)
            self._atomic = bool(info.config.allow_atomic)
        return self._atomic

    async def publish_batch(
        self, messages: Sequence[BatchMessage], *, timeout: float = 5.0
    ) -> list[int]:
        """Publish ``messages`` as one atomic batch: the stream stores all of them, at
        consecutive sequences, or none (a batch left uncommitted, e.g. by a crash, is
        dropped by the server). The stream sequence of each message.

        ``WrongLastSequence`` when an expected sequence does not hold; ``BatchDuplicate``
        when the stream already has one of the event ids (see ``BatchDuplicate``).
        Needs ``atomic_batches()``.
        """
        if not messages or any(not m.event_id for m in messages):
            raise ValueError("a batch needs messages, each with its event id")
        batch_id = uuid.uuid4().hex
        last = len(messages)
        reply = b""
        for number, message in enumerate(messages, 1):
            headers = {MSG_ID: message.event_id, BATCH_ID: batch_id, BATCH_SEQUENCE: str(number)}
            if message.expected_last_subject_seq is not None:
                headers[EXPECTED_LAST_SUBJECT_SEQUENCE] = str(message.expected_last_subject_seq)
                if message.expected_subject is not None:
                    headers[EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT] = message.expected_subject
            if number < last:
                # Only the commit is answered; the server holds the rest until then.
                await self.nc.publish(message.subject, message.envelope, headers=headers)
                continue
            headers[BATCH_COMMIT] = "1"
            try:
                answer = await self.nc.request(
                    message.subject, message.envelope, timeout=timeout, headers=headers
                )
            except nats.errors.NoRespondersError:
                raise nats.js.errors.NoStreamResponseError from None
            reply = answer.data
        ack = json.loads(reply)
        error = ack.get("error")
        if error:
            code = error.get("err_code")
            if code == WRONG_LAST_SEQUENCE_ERR:
                raise WrongLastSequence(f"atomic batch: {error.get('description')}")
            if code == BATCH_DUPLICATE_MSG_ID_ERR:
                raise BatchDuplicate(str(error.get("description")))
            raise nats.js.errors.APIError(
                code=error.get("code"), err_code=code, description=error.get("description")
            )
        top = int(ack["seq"])
        if int(ack.get("count", last)) != last:
            raise BusError(f"atomic batch of {last} stored as {ack.get('count')}")
        return list(range(top - last + 1, top + 1))

    async def last_sequence(self, subject_filter: str) -> int:
        """Stream sequence of the last message on ``subject_filter`` (0 when none)."""
        try:
            msg = await self.js.get_last_msg(self.stream, subject_filter)
        except nats.js.errors.NotFoundError:
            return 0
        return int(msg.seq or 0)

    async def subscribe_durable(
        self,
        durable: str,
        filter_subject: str,
        handler: Handler,
        *,
        max_deliver: int = 5,
        ack_wait: float = 30.0,
        max_ack_pending: int = 1000,
        batch: int = 64,
        idle_fetch_timeout: float = 5.0,
        retry_delay: float = 0.5,
    ) -> DurableSubscription:
        """Create (or update) the durable pull consumer, bind to it, and start fetching.

        Messages are handled one at a time in stream order; each is acked after
        ``handler`` returns, terminated when it raises ``Reject`` or fails for the
        ``max_deliver``-th time, and otherwise nak'ed for redelivery after
        ``retry_delay * attempt`` seconds. Several processes may run the same durable:
        JetStream shares the messages out between them (a work queue).
        """
        await self.js.add_consumer(
            self.stream,
            ConsumerConfig(
                durable_name=durable,
                filter_subject=filter_subject,
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                max_deliver=max_deliver,
                ack_wait=ack_wait,
                max_ack_pending=max_ack_pending,
            ),
        )
        pull = await self.js.pull_subscribe_bind(durable=durable, stream=self.stream)
        subscription = DurableSubscription(durable)
        runner = _FetchLoop(subscription, pull, handler, max_deliver, batch,
                            idle_fetch_timeout, retry_delay)  # fmt: skip
        subscription._task = asyncio.create_task(runner.run(), name=f"durable:{durable}")
        self._subscriptions.append(subscription)
        return subscription


@dataclass
class _FetchLoop:
    subscription: DurableSubscription
    pull: JetStreamContext.PullSubscription
    handler: Handler
    max_deliver: int
    batch: int
    idle_fetch_timeout: float
    retry_delay: float

    async def run(self) -> None:
        stopping = self.subscription._stopping
        try:
            while not stopping.is_set():
                messages = await self._fetch()
                for index, msg in enumerate(messages):
                    if stopping.is_set():
                        for unhandled in messages[index:]:
                            await unhandled.nak()
                        break
                    await self._handle(msg)
        finally:
            with contextlib.suppress(Exception):
                await self.pull.unsubscribe()

    async def _fetch(self) -> list[Msg]:
        """Up to ``batch`` messages: what is there at once, else the first to arrive.

        (A pull returns as soon as the server has handed over what it had, so a lone
        message is not held back waiting for the batch to fill.)
        """
        self.subscription._fetching = True
        try:
            return await self.pull.fetch(self.batch, timeout=self.idle_fetch_timeout)
        except TimeoutError:
            return []
        except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
            self.subscription._stopping.set()
            return []
        except nats.errors.Error as exc:
            log.warning("fetch_failed", durable=self.subscription.durable, error=str(exc))
            await asyncio.sleep(self.retry_delay)
            return []
        finally:
            self.subscription._fetching = False

    async def _handle(self, msg: Msg) -> None:
        metadata = msg.metadata
        delivery = Delivery(
            subject=msg.subject,
            data=msg.data,
            headers=msg.headers or {},
            stream_seq=metadata.sequence.stream,
            num_delivered=metadata.num_delivered,
        )
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(
            durable=self.subscription.durable, subject=msg.subject, event_id=delivery.event_id
        )
        try:
            await self.handler(delivery)
        except Reject as exc:
            log.error("message_rejected", reason=str(exc), stream_seq=delivery.stream_seq)
            await _settle(msg.term())
        except Exception:
            if delivery.num_delivered >= self.max_deliver:
                log.exception("message_given_up", attempts=delivery.num_delivered)
                await _settle(msg.term())
            else:
                log.warning("message_retry", attempts=delivery.num_delivered, exc_info=True)
                await _settle(msg.nak(delay=self.retry_delay * delivery.num_delivered))
        else:
            await _settle(msg.ack())
        finally:
            structlog.contextvars.clear_contextvars()


async def _settle(reply: Awaitable[None]) -> None:
    """Send an ack/nak/term; if the connection is gone, JetStream redelivers after
    ack_wait anyway, so a lost reply costs a redelivery, never an event."""
    try:
        await reply
    except nats.errors.Error as exc:
        log.warning("ack_not_sent", error=str(exc))
