"""The event bus: NATS JetStream, one stream ``DDZ`` over ``ddz.v1.>``.

Subjects (versioned; one token per level, no dots inside tokens):

    ddz.v1.<category>.<bucket>.<id>.<EventType>           public (hand, table, room)
    ddz.v1.internal.<category>.<bucket>.<id>.<EventType>  every seat's cards (cards_dealt)

e.g. ``ddz.v1.hand.17.<hand_id>.play_made``. Stream ids are ``<category>-<id>``
(``hand-7f3a…``, ``table-12``); ``subject_for`` maps one to the other. The bucket,
``crc32(id) % BUCKETS``, lets a consumer take a share of the streams by subject alone
(``bucket_filters``): the server sends an instance only the events of the hands it
plays, rather than every event for it to skip.

Publishing sets ``Nats-Msg-Id`` to the event id so JetStream drops duplicates within the
stream's duplicate window; consumers are durable, created explicitly (``add_consumer``),
pulled, and a message is acked only after the handler returned, so a crash means
redelivery, never loss. Handlers must be idempotent on the event id (the store is: an
identical event id is a no-op).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

import nats
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    ConsumerInfo,
    DeliverPolicy,
    KeyValueConfig,
    StorageType,
    StreamConfig,
)
from nats.js.kv import KeyValue

from ddz.adapters.telemetry import metrics, tracing
from ddz.application.tasks import cancel_and_wait

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
MAX_RETRY_DELAY = 10.0
"""Seconds at most before a failed message comes again (the delay grows with each try),
so work resumes soon after a long outage of what the handler needs."""
ATOMIC_SERVER_VERSION = (2, 12, 0)
"""The oldest nats-server with atomic batch publishing (``allow_atomic``)."""
MIN_SERVER_VERSION = (2, 11, 0)
"""The oldest nats-server the suite runs on: the single-writer check over a hand's wildcard
filter needs ``Nats-Expected-Last-Subject-Sequence-Subject`` (2.11). An older server
ignores that header and checks the event's own subject instead: it refuses a hand's second
event and lets a stale writer through."""

BUCKETS = 64
"""Buckets of the subject layout. Part of every subject: never changed (a reader of the
stream computes a stream's bucket from its id)."""
NO_EVENTS = f"{SUBJECT_ROOT}.{INTERNAL}.none"
"""A subject no event is published on: the filter of a consumer that wants no bucket
now (a consumer must filter on something)."""

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


def server_list(url: str | Sequence[str]) -> list[str]:
    """The servers of ``url``: ``"nats://a:4222,nats://b:4222"`` is two."""
    parts = url.split(",") if isinstance(url, str) else url
    return [part.strip() for part in parts if part.strip()]


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


def bucket_of(entity_id: str) -> int:
    """The subject bucket of a stream's entity (``crc32(id) % BUCKETS``)."""
    return zlib.crc32(entity_id.encode()) % BUCKETS


def partition_of(hand_id: str, count: int) -> int:
    """The partition of ``count`` that ``hand_id`` belongs to: its subject bucket modulo
    ``count`` (the bot's partitions, ``DDZ_BOT_PARTITIONS``; the rules routing's key)."""
    return bucket_of(hand_id) % count


def subject_for(stream_id: str, event_type: str, internal: bool = False) -> str:
    """The subject an event of ``stream_id`` is published on."""
    if not _TOKEN.match(event_type):
        raise ValueError(f"event type {event_type!r} is not a valid subject token")
    return f"{stream_filter(stream_id, internal)[:-1]}{event_type}"


def stream_filter(stream_id: str, internal: bool = False) -> str:
    """The subject filter of every public (or internal) event of one stream."""
    category, entity_id = stream_parts(stream_id)
    return f"{_prefix(internal)}.{category}.{bucket_of(entity_id)}.{entity_id}.*"


def category_filter(category: str, internal: bool = False, event_type: str = "*") -> str:
    """The subject filter of every public (or internal) event of a category, or of its
    events of one type."""
    return f"{_prefix(internal)}.{category}.*.*.{event_type}"


def bucket_filters(category: str, buckets: Iterable[int]) -> list[str]:
    """The subject filters of every event, public and internal, of the streams of
    ``category`` in ``buckets`` (``[NO_EVENTS]`` for none)."""
    filters = [
        f"{_prefix(internal)}.{category}.{bucket}.*.*"
        for bucket in sorted(set(buckets))
        for internal in (False, True)
    ]
    return filters or [NO_EVENTS]


def _prefix(internal: bool) -> str:
    return f"{SUBJECT_ROOT}.{INTERNAL}" if internal else SUBJECT_ROOT


@dataclass(frozen=True, slots=True)
class SubjectParts:
    stream_id: str
    event_type: str
    internal: bool


class SubjectTokens(NamedTuple):
    category: str
    bucket: str
    entity_id: str
    event_type: str
    internal: bool


def split_subject(subject: str) -> SubjectTokens | None:
    """The tokens of an event subject (``ddz.v1[.internal].<category>.<bucket>.<id>.<type>``),
    None if it is not one. Unchecked (the bucket is taken as it is): cheap enough for
    every message a consumer or the metrics see; ``parse_subject`` checks it."""
    tokens = subject.split(".")
    internal = len(tokens) == 7 and tokens[2] == INTERNAL
    if internal:
        del tokens[2]
    if len(tokens) != 6 or f"{tokens[0]}.{tokens[1]}" != SUBJECT_ROOT:
        return None
    return SubjectTokens(tokens[2], tokens[3], tokens[4], tokens[5], internal)


class DeliveryTokens(NamedTuple):
    """What a JetStream message's reply subject says of its delivery."""

    delivered: int  # times it was delivered, this one included
    stream_seq: int
    pending: int  # messages of the stream the consumer has not sent yet: its lag


def delivery_of(reply: str | None) -> DeliveryTokens | None:
    """The delivery a JetStream message's reply subject describes
    (``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>``,
    with a domain and an account hash after ``ACK`` and a token at the end on newer
    servers), None if it is not one (a test's hand-made message). ``Msg.metadata`` without
    its timestamp's datetime, which costs more than the rest of a message's handling."""
    tokens = (reply or "").split(".")
    if len(tokens) < 9 or tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    at = 0 if len(tokens) == 9 else 2
    try:
        return DeliveryTokens(int(tokens[4 + at]), int(tokens[5 + at]), int(tokens[8 + at]))
    except ValueError:
        return None


def delivery_from(msg: Msg) -> DeliveryTokens:
    """``delivery_of`` the message's reply, else what nats-py reads of it (``Msg.metadata``,
    which raises if the message did not come from JetStream)."""
    tokens = delivery_of(msg.reply)
    if tokens is None:
        meta = msg.metadata
        tokens = DeliveryTokens(meta.num_delivered, meta.sequence.stream, meta.num_pending)
    return tokens


def parse_subject(subject: str) -> SubjectParts:
    """Inverse of ``subject_for``."""
    parts = split_subject(subject)
    if parts is None:
        raise ValueError(f"not a ddz event subject: {subject!r}")
    if parts.bucket != str(bucket_of(parts.entity_id)):
        raise ValueError(
            f"not a ddz event subject (bucket {parts.bucket} of {parts.entity_id}): {subject!r}"
        )
    return SubjectParts(
        stream_id_for(parts.category, parts.entity_id), parts.event_type, parts.internal
    )


def _count_published(subject: str) -> None:
    parts = split_subject(subject)
    if parts is not None:
        metrics.event_published(parts.category, parts.event_type)


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


class KeptConsumer(Protocol):
    """A consumer the bus verifies after a reconnection (``EventBus.keep``): the server
    may have restarted without its store and lost it."""

    def unverified(self) -> None:
        """The connection came back: unhealthy until ``verify`` answers."""

    async def verify(self) -> bool:
        """Whether the consumer is there, after creating it again if it was lost."""
        ...


ConnectionHook = Callable[["EventBus"], Awaitable[None]]
"""Called with the bus as its connection drops, comes back or closes."""


@dataclass(eq=False)
class DurableSubscription:
    """A running fetch loop over a durable pull consumer. ``await stop()`` ends it."""

    durable: str
    _task: asyncio.Task[None] | None = None
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _fetching: bool = False

    _consumer: DurablePull | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def healthy(self) -> bool:
        """The loop runs and its consumer answers (``DurablePull.healthy``)."""
        return self.running and self._consumer is not None and self._consumer.healthy

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
        self._stream_options: dict[str, Any] = {}  # of the last ensure_stream
        self._told_kept = False  # the existing stream's own config was logged
        self.closing = False  # close() was called: the connection's end is no news
        self._restoring: asyncio.Task[bool] | None = None
        self._kept: list[KeptConsumer] = []  # verified after a reconnection (``keep``)

    @property
    def connected(self) -> bool:
        """The connection to NATS is up (False while it reconnects, and once closed)."""
        return bool(self.nc.is_connected)

    def subscriptions_healthy(self) -> bool:
        """Every durable subscription started here (``subscribe_durable``) runs and its
        consumer answers; a check for ``ddz.adapters.telemetry.health``."""
        return all(subscription.healthy for subscription in self._subscriptions)

    @classmethod
    async def connect(
        cls,
        url: str | Sequence[str],
        *,
        name: str | None = None,
        stream: str = STREAM_NAME,
        on_disconnected: ConnectionHook | None = None,
        on_reconnected: ConnectionHook | None = None,
        on_closed: ConnectionHook | None = None,
        **options: Any,
    ) -> EventBus:
        """Connect (reconnecting forever on a dropped connection). ``url``: one server,
        or the servers of a cluster (a list, or one string with commas, as
        ``DDZ_NATS_URL`` holds them): the client picks one and moves to another when it
        goes away. The hooks are called with the bus as the connection drops, comes back
        and closes for good (nats-py's ``disconnected_cb``, ``reconnected_cb``,
        ``closed_cb``), never while connecting."""
        options.setdefault("max_reconnect_attempts", -1)
        options.setdefault("reconnect_time_wait", 0.5)
        bus: EventBus | None = None

        def relay(hook: ConnectionHook | None) -> Callable[[], Awaitable[None]]:
            async def callback() -> None:
                if hook is not None and bus is not None:
                    await hook(bus)

            return callback

        nc = await nats.connect(
            server_list(url),
            name=name,
            disconnected_cb=relay(on_disconnected),
            reconnected_cb=relay(on_reconnected),
            closed_cb=relay(on_closed),
            **options,
        )
        bus = cls(nc, stream)
        return bus

    async def bucket(self, name: str, replicas: int = 1) -> KeyValue:
        """The KV bucket ``name`` (leases, queued tickets), made when missing: on file,
        one value per key, no bucket TTL (each entry carries its own)."""
        try:
            return await self.js.key_value(name)
        except nats.js.errors.BucketNotFoundError:
            pass
        config = KeyValueConfig(bucket=name, history=1, replicas=replicas,
                                storage=StorageType.FILE)  # fmt: skip
        try:
            return await self.js.create_key_value(config)
        except nats.js.errors.BadRequestError:  # made meanwhile by another instance
            return await self.js.key_value(name)

    async def close(self) -> None:
        """Stop every subscription started here, flush and close the connection."""
        self.closing = True
        await cancel_and_wait([self._restoring])
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
        max_bytes: int | None = None,
        replicas: int = 1,
        storage: StorageType = StorageType.FILE,
    ) -> None:
        """Create the stream with this configuration, or make an existing one fit for us.

        A new stream gets ``replicas`` copies and the retention limits (``max_age``
        seconds, ``max_bytes``; None: no limit). An existing stream keeps its replicas,
        limits and storage: an operator may have scaled it to R3 or changed its
        retention, and a starting service must not undo that. Only what the suite's
        correctness needs is raised there: our subjects, the duplicate window (at least
        ``duplicate_window``, so a retried publish is still recognised), atomic batches,
        direct gets (``allow_direct``: a read of one subject's last message, which a NATS
        permission can pin to that subject, unlike ``STREAM.MSG.GET``).
        A difference it leaves alone is logged once per bus (``stream_config_kept``).

        Atomic batch publishing is asked for on nats-server >= 2.12 (an older server
        lacks it, and ``atomic_batches`` then says no). A server older than
        ``MIN_SERVER_VERSION`` is refused (``UnsupportedServer``). ``restore_stream``
        does it again with the same configuration."""
        self._stream_options = {
            "duplicate_window": duplicate_window, "max_age": max_age, "max_bytes": max_bytes,
            "replicas": replicas, "storage": storage,
        }  # fmt: skip
        server = self.nc.connected_server_version
        url = self.nc.connected_url
        version = (server.major, server.minor, server.patch)
        check_server_version(version, url.geturl() if url is not None else "")
        atomic = version >= ATOMIC_SERVER_VERSION
        if max_age is not None:
            duplicate_window = min(duplicate_window, max_age)  # the server's own rule
        wanted = StreamConfig(
            name=self.stream,
            subjects=[ALL_SUBJECTS],
            storage=storage,
            num_replicas=replicas,
            duplicate_window=duplicate_window,
            max_age=max_age,
            max_bytes=max_bytes,
            allow_atomic=True if atomic else None,
            allow_direct=True,  # reads pinned to a subject (settlement's: nats_auth)
        )
        try:
            info = await self.js.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            try:
                await self.js.add_stream(wanted)
                return
            except nats.js.errors.BadRequestError as exc:
                if exc.err_code != STREAM_NAME_IN_USE_ERR:
                    raise
                # Another service created it a moment ago: fit that one.
                info = await self.js.stream_info(self.stream)
        await self._fit_stream(info.config, wanted)

    async def _fit_stream(self, have: StreamConfig, wanted: StreamConfig) -> None:
        """Raise in the existing stream ``have`` what correctness needs of ``wanted``;
        leave the rest, and log what differs once."""
        raised: dict[str, Any] = {}
        subjects = list(have.subjects or [])
        if ALL_SUBJECTS not in subjects:
            raised["subjects"] = [*subjects, ALL_SUBJECTS]
        window = wanted.duplicate_window or 0
        if _limit(have.max_age) is not None:
            window = min(window, have.max_age or 0)  # no longer than the stream keeps
        if (have.duplicate_window or 0) < window:
            raised["duplicate_window"] = window
        if wanted.allow_atomic and not have.allow_atomic:
            raised["allow_atomic"] = True
        if wanted.allow_direct and not have.allow_direct:
            raised["allow_direct"] = True
        kept = {
            name: {"stream": mine, "ours": theirs}
            for name, mine, theirs in (
                ("replicas", have.num_replicas or 1, wanted.num_replicas or 1),
                ("max_age", _limit(have.max_age), _limit(wanted.max_age)),
                ("max_bytes", _limit(have.max_bytes), _limit(wanted.max_bytes)),
                ("storage", _plain(have.storage), _plain(wanted.storage)),
            )
            if mine != theirs
        }
        if kept and not self._told_kept:
            self._told_kept = True
            log.info("stream_config_kept", stream=self.stream, **kept)
        if raised:
            log.warning("stream_config_raised", stream=self.stream, **raised)
            await self.js.update_stream(replace(have, **raised))
            self._atomic = None

    def restore_soon(self) -> None:
        """After a reconnection (from its hook, which must not wait for the server's
        answers), in the background: the stream (``restore_stream``), then each consumer
        kept here (``keep``; ``DurablePull`` keeps itself), each unhealthy until then;
        ``close`` cancels it."""
        for consumer in self._kept:
            consumer.unverified()
        if self._restoring is None or self._restoring.done():
            self._restoring = asyncio.create_task(self._restore(), name="restore")

    async def _restore(self) -> bool:
        if not await self.restore_stream():
            return False
        for consumer in list(self._kept):
            await consumer.verify()
        return True

    def keep(self, consumer: KeptConsumer) -> None:
        """Verify ``consumer`` after each reconnection (``restore_soon``)."""
        self._kept.append(consumer)

    def forget(self, consumer: KeptConsumer) -> None:
        with contextlib.suppress(ValueError):
            self._kept.remove(consumer)

    async def restore_stream(self, *, attempts: int = 60, delay: float = 0.5) -> bool:
        """``ensure_stream`` again, as configured last, e.g. after a reconnection to a
        server that lost its store. A server whose JetStream is still starting does
        not answer yet: retried ``attempts`` times. Whether the stream is there."""
        for attempt in range(1, attempts + 1):
            if self.closing or self.nc.is_closed:
                return False
            try:
                await self.ensure_stream(**self._stream_options)
                return True
            except UnsupportedServer:
                raise
            except (nats.errors.Error, TimeoutError) as exc:
                if attempt == attempts:
                    log.warning("stream_not_restored", stream=self.stream, error=repr(exc))
                    return False
                await asyncio.sleep(delay)
        return False

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
            with tracing.producing(subject):
                tracing.inject(headers)  # beside the envelope, never in its signed bytes
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
        if not ack.duplicate:
            _count_published(subject)
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
        with tracing.producing(messages[0].subject, len(messages)):
            carried: dict[str, str] = {}
            tracing.inject(carried)  # one publish span, named by every message
            reply = await self._send_batch(messages, carried, timeout)
        return self._batch_stored(messages, reply)

    async def _send_batch(
        self, messages: Sequence[BatchMessage], carried: Mapping[str, str], timeout: float
    ) -> bytes:
        batch_id = uuid.uuid4().hex
        last = len(messages)
        reply = b""
        for number, message in enumerate(messages, 1):
            headers = {MSG_ID: message.event_id, BATCH_ID: batch_id, BATCH_SEQUENCE: str(number)}
            headers.update(carried)
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
        return reply

    @staticmethod
    def _batch_stored(messages: Sequence[BatchMessage], reply: bytes) -> list[int]:
        last = len(messages)
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
        for message in messages:
            _count_published(message.subject)
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
        ``retry_delay * attempt`` seconds (at most ``MAX_RETRY_DELAY``). Several
        processes may run the same durable: JetStream shares the messages out between
        them (a work queue).
        """
        config = ConsumerConfig(
            durable_name=durable,
            name=durable,  # created on $JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>,
            # so that a NATS permission can pin a user's consumer to its filter
            filter_subject=filter_subject,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            max_deliver=max_deliver,
            ack_wait=ack_wait,
            max_ack_pending=max_ack_pending,
        )
        pull = await DurablePull.bind(self, config, retry_delay=retry_delay)
        subscription = DurableSubscription(durable, _consumer=pull)
        runner = _FetchLoop(subscription, pull, handler, max_deliver, batch,
                            idle_fetch_timeout, retry_delay)  # fmt: skip
        subscription._task = asyncio.create_task(runner.run(), name=f"durable:{durable}")
        self._subscriptions.append(subscription)
        return subscription

    async def ensure_pull_consumer(
        self,
        durable: str,
        filter_subject: str | Sequence[str],
        *,
        ack_wait: float,
        max_ack_pending: int,
        resume_at: int | None = None,
        from_now: bool = False,
        inactive_threshold: float | None = None,
    ) -> ConsumerInfo:
        """Make sure the durable pull consumer ``durable`` exists: explicit acks, no
        delivery limit (the caller terminates what it gives up on). ``from_now``: a new
        one starts with the messages stored after it is made (nothing older is
        replayed); ``inactive_threshold``: seconds without a pull after which the
        server deletes it (the consumer of one instance, gone with it).

        - There already, of this kind: kept where it stands (its acks and pending
          redeliveries), ``ack_wait`` and ``max_ack_pending`` brought up to date.
        - There, of another kind (a push consumer, cumulative acks): replaced by one
          that starts after what the old one had acknowledged.
        - Missing (deleted, or the server lost its store): created from the stream
          sequence ``resume_at`` when given and the stream still reaches it, else from
          the start. A stream that is gone too is created again first (``ensure_stream``).

        ``filter_subject`` may be several filters (``bucket_filters``); an update in
        place changes them, and the consumer goes on from where it stands.

        Returns the consumer's info as it now stands."""
        filters = [filter_subject] if isinstance(filter_subject, str) else list(filter_subject)
        try:
            info: ConsumerInfo | None = await self.js.consumer_info(self.stream, durable)
        except nats.js.errors.NotFoundError as exc:
            if exc.err_code == STREAM_NOT_FOUND_ERR:
                log.warning("stream_missing", stream=self.stream, durable=durable)
                await self.restore_stream(attempts=1)
            info = None
        config = ConsumerConfig(
            durable_name=durable,
            # One filter is sent as ``filter_subject``: the create subject names it,
            # which is what a pinned role's permission checks (nats_auth).
            filter_subject=filters[0] if len(filters) == 1 else None,
            filter_subjects=filters if len(filters) > 1 else None,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.NEW if from_now else DeliverPolicy.ALL,
            max_deliver=-1,
            ack_wait=ack_wait,
            max_ack_pending=max_ack_pending,
            inactive_threshold=inactive_threshold,
        )
        if info is not None:
            old = info.config
            # (The server's answer holds the policies as plain strings.)
            if old.deliver_subject is None and old.ack_policy == AckPolicy.EXPLICIT:
                # Same kind: an update in place (its start position cannot change).
                config.deliver_policy = old.deliver_policy
                config.opt_start_seq = old.opt_start_seq
                config.opt_start_time = old.opt_start_time
                return await self.js.add_consumer(self.stream, config)
            floor = info.ack_floor.stream_seq if info.ack_floor is not None else 0
            resume_at = (floor or 0) + 1
            log.warning("consumer_replaced", durable=durable, was_push=bool(old.deliver_subject),
                        ack_policy=str(old.ack_policy), resume_at=resume_at)  # fmt: skip
            await self.js.delete_consumer(self.stream, durable)
        if resume_at is not None and resume_at > 1:
            stream = await self.js.stream_info(self.stream)
            if stream.state.last_seq + 1 >= resume_at:
                config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
                config.opt_start_seq = resume_at
            # else: the stream is younger than what we had read (it was lost and made
            # again): everything in it is new.
        return await self.js.add_consumer(self.stream, config)


CONSUMER_NOT_FOUND_ERR = 10014  # JSConsumerNotFoundErr
STREAM_NOT_FOUND_ERR = 10059  # JSStreamNotFoundErr
STREAM_NAME_IN_USE_ERR = 10058  # JSStreamNameExistErr


def _plain(value: object) -> str:
    """An enum of the server's answer (sometimes a plain string) as its value."""
    return str(getattr(value, "value", value))


def _limit(value: float | None) -> float | None:
    """A stream limit as one value: the server's "no limit" (0 or -1) as None."""
    return None if value is None or value <= 0 else value


class DurablePull:
    """A durable pull consumer, bound, that outlives the server forgetting it.

    ``fetch`` returns what arrived, or nothing: on an idle timeout, and after a failure
    (logged once per run of failures, and once when the consumer answers again). After
    a failure, and after the connection came back (``EventBus.restore_soon``), the
    consumer is looked up: one the server no longer has (restarted without its store)
    is created again from its configuration, the stream too if it is gone, and
    fetching carries on. ``healthy``: the consumer answered last time it was asked.
    """

    def __init__(
        self,
        bus: EventBus,
        config: ConsumerConfig,
        pull: JetStreamContext.PullSubscription,
        *,
        retry_delay: float = 0.5,
    ) -> None:
        self.bus = bus
        self.config = config
        self.pull = pull
        self.retry_delay = retry_delay
        self.healthy = True
        self._failing = False  # a failure was logged; its end will be

    @property
    def durable(self) -> str:
        return str(self.config.durable_name)

    @classmethod
    async def bind(
        cls, bus: EventBus, config: ConsumerConfig, *, retry_delay: float = 0.5
    ) -> DurablePull:
        """Create (or update) the consumer and bind a pull subscription to it."""
        await bus.js.add_consumer(bus.stream, config)
        pull = await bus.js.pull_subscribe_bind(durable=str(config.durable_name), stream=bus.stream)
        durable = cls(bus, config, pull, retry_delay=retry_delay)
        bus.keep(durable)
        return durable

    async def fetch(self, batch: int, timeout: float) -> list[Msg]:
        """Up to ``batch`` messages, waiting up to ``timeout`` for the first. Raises only
        ``ConnectionClosedError``/``ConnectionDrainingError`` (the bus is closing)."""
        try:
            messages = await self.pull.fetch(batch, timeout=timeout)
        except TimeoutError:
            return []
        except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
            raise
        except nats.errors.Error as exc:  # "no responders": the consumer may be gone
            self._failed(exc)
            if not await self.verify():
                await asyncio.sleep(self.retry_delay)
            return []
        self._answered()
        return messages

    def unverified(self) -> None:
        """The connection came back: the server may have lost the consumer."""
        self.healthy = False

    async def verify(self) -> bool:
        """Whether the consumer is there, after creating it again if the server lost it
        (and the stream, if that is gone too)."""
        try:
            try:
                await self.bus.js.consumer_info(self.bus.stream, self.durable)
            except nats.js.errors.NotFoundError as exc:
                if exc.err_code == STREAM_NOT_FOUND_ERR:
                    await self.bus.restore_stream(attempts=1)
                # From the start of the stream: where the lost consumer stood is lost with
                # it (and a stream made again numbers its messages from 1), and what comes
                # twice is acknowledged as already handled.
                self.config = replace(
                    self.config, deliver_policy=DeliverPolicy.ALL, opt_start_seq=None
                )
                await self.bus.js.add_consumer(self.bus.stream, self.config)
                log.warning("consumer_recreated", durable=self.durable, stream=self.bus.stream)
        except (nats.errors.Error, TimeoutError) as exc:
            self._failed(exc)
            return False
        self._answered()
        return True

    async def unsubscribe(self) -> None:
        self.bus.forget(self)
        with contextlib.suppress(Exception):
            await self.pull.unsubscribe()

    def _failed(self, exc: Exception) -> None:
        if not self._failing:
            log.warning("consumer_failing", durable=self.durable, error=repr(exc))
        self.healthy = False
        self._failing = True

    def _answered(self) -> None:
        if self._failing:
            log.info("consumer_answers", durable=self.durable)
        self.healthy = True
        self._failing = False


class PullLost(BusError):
    """The pull requests of a ``StreamingPull`` are gone: the consumer was deleted, or
    nothing (not even a heartbeat) came for two heartbeats (the connection dropped, the
    server restarted). The next ``next_batch`` asks again."""


class StreamingPull:
    """A durable pull consumer read as a stream: messages arrive as they are stored,
    with no round trip per batch, and never more than ``window`` at once unread.

    Pull requests are kept outstanding ahead of the reader (once half the window is
    used, a request for the rest), each with ``expires`` and an idle ``heartbeat``: the
    server sends a heartbeat while it has nothing to send, so a silence of two is a lost
    request, as is a "consumer deleted" answer (``PullLost``). The messages are read by
    a subscription callback into a list, not one ``next_msg`` task each (what makes
    nats-py's ``fetch`` cost a few times a message's handling when messages come one
    by one). Acks are the reader's.
    """

    STATUS = "Status"
    DESCRIPTION = "Description"
    PENDING = "Nats-Pending-Messages"

    def __init__(
        self,
        bus: EventBus,
        durable: str,
        *,
        window: int = 256,
        expires: float = 30.0,
        heartbeat: float = 1.0,
    ) -> None:
        self.bus = bus
        self.durable = durable
        self.window = window
        self.expires = expires
        self.heartbeat = heartbeat
        self._next = f"$JS.API.CONSUMER.MSG.NEXT.{bus.stream}.{durable}"
        self._inbox = bus.nc.new_inbox()
        self._sub: Any = None
        self._arrived: list[Msg] = []
        self._ready = asyncio.Event()
        self._outstanding = 0  # messages the requests still out may bring
        self._heard = 0.0  # loop time of the last message, heartbeat or request
        self._lost: str | None = None

    async def start(self) -> None:
        self._sub = await self.bus.nc.subscribe(
            self._inbox, cb=self._on_message, pending_msgs_limit=-1, pending_bytes_limit=-1
        )

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    async def next_batch(self, timeout: float) -> list[Msg]:
        """What has arrived since the last call, waiting up to ``timeout`` for the first
        (``[]`` if none came); ``PullLost`` when the requests are gone."""
        await self._ask()
        if not self._arrived and self._lost is None:
            self._ready.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
        if self._arrived:
            batch, self._arrived = self._arrived, []
            return batch
        loop = asyncio.get_running_loop()
        if self._lost is None and loop.time() - self._heard > 2 * self.heartbeat + 0.5:
            self._lost = f"no heartbeat for {loop.time() - self._heard:.1f}s"
        if self._lost is not None:
            why, self._lost, self._outstanding = self._lost, None, 0
            raise PullLost(why)
        return []

    async def _ask(self) -> None:
        if self._outstanding > self.window // 2:
            return
        want = self.window - self._outstanding
        request = {
            "batch": want,
            "expires": int(self.expires * 1e9),
            "idle_heartbeat": int(self.heartbeat * 1e9),
        }
        await self.bus.nc.publish(self._next, json.dumps(request).encode(), reply=self._inbox)
        self._outstanding += want
        self._heard = asyncio.get_running_loop().time()

    async def _on_message(self, msg: Msg) -> None:
        self._heard = asyncio.get_running_loop().time()
        headers = msg.headers
        status = headers.get(self.STATUS) if headers else None
        if status is None:
            self._arrived.append(msg)
            self._outstanding -= 1
            self._ready.set()
            return
        if status == "100":
            return  # an idle heartbeat: the requests are alive
        # A request ended (expired 408, "no messages" 404, a 409: max waiting, leadership
        # change, consumer deleted), or could not be delivered (503: no consumer).
        assert headers is not None
        self._outstanding = max(0, self._outstanding - int(headers.get(self.PENDING, 0) or 0))
        description = headers.get(self.DESCRIPTION, "")
        if status == "503" or "deleted" in description.lower():
            self._lost = f"{status} {description}".strip()
            self._ready.set()


@dataclass
class _FetchLoop:
    subscription: DurableSubscription
    pull: DurablePull
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
            await self.pull.unsubscribe()

    async def _fetch(self) -> list[Msg]:
        """Up to ``batch`` messages: what is there at once, else the first to arrive.

        (A pull returns as soon as the server has handed over what it had, so a lone
        message is not held back waiting for the batch to fill.)
        """
        self.subscription._fetching = True
        try:
            return await self.pull.fetch(self.batch, timeout=self.idle_fetch_timeout)
        except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
            self.subscription._stopping.set()
            return []
        finally:
            self.subscription._fetching = False

    async def _handle(self, msg: Msg) -> None:
        tokens = delivery_from(msg)
        metrics.event_consumed(self.subscription.durable, tokens)
        delivery = Delivery(
            subject=msg.subject,
            data=msg.data,
            headers=msg.headers or {},
            stream_seq=tokens.stream_seq,
            num_delivered=tokens.delivered,
        )
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(
            durable=self.subscription.durable, subject=msg.subject, event_id=delivery.event_id
        )
        # In its producer's trace, the verdict's log lines too.
        with tracing.consuming(self.subscription.durable, msg.subject, msg.headers):
            await self._settled(msg, delivery)

    async def _settled(self, msg: Msg, delivery: Delivery) -> None:
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
                delay = min(MAX_RETRY_DELAY, self.retry_delay * delivery.num_delivered)
                await _settle(msg.nak(delay=delay))
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
