"""The event bus: NATS JetStream, one stream ``DDZ`` over ``ddz.v1.>`` (its subjects:
``subjects``).

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
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import nats
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    ConsumerInfo,
    DeliverPolicy,
    KeyValueConfig,
    StorageType,
)
from nats.js.kv import KeyValue

from ddz.adapters.messaging.delivery import BatchMessage, Handler, Published
from ddz.adapters.messaging.pulls import DurablePull, DurableSubscription, _FetchLoop
from ddz.adapters.messaging.server import (
    BATCH_COMMIT,
    BATCH_DUPLICATE_MSG_ID_ERR,
    BATCH_ID,
    BATCH_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT,
    MSG_ID,
    STREAM_NOT_FOUND_ERR,
    WRONG_LAST_SEQUENCE_ERR,
    BatchDuplicate,
    BusError,
    WrongLastSequence,
    server_list,
)
from ddz.adapters.messaging.stream_upkeep import KeptConsumer, StreamUpkeep
from ddz.adapters.messaging.subjects import STREAM_NAME, split_subject
from ddz.adapters.telemetry import metrics, tracing
from ddz.application.tasks import cancel_and_wait

log = structlog.get_logger("ddz.bus")


def _count_published(subject: str) -> None:
    parts = split_subject(subject)
    if parts is not None:
        metrics.event_published(parts.category, parts.event_type)


ConnectionHook = Callable[["EventBus"], Awaitable[None]]
"""Called with the bus as its connection drops, comes back or closes."""


class EventBus(StreamUpkeep):
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
        headers[nats.js.api.Header.EXPECTED_STREAM.value] = self.stream
        try:
            with tracing.producing(subject):
                tracing.inject(headers)  # beside the envelope, never in its signed bytes
                # What ``js.publish`` sends and checks, its answer read as the plain JSON
                # it is (a publish is on every decision's path: no ``PubAck`` built).
                reply = await self.nc.request(
                    subject, envelope, timeout=timeout or self.js._timeout, headers=headers
                )
            ack = json.loads(reply.data)
            error = ack.get("error")
            if error is not None:
                nats.js.errors.APIError.from_error(error)  # raises the error's own class
        except nats.errors.NoRespondersError:
            raise nats.js.errors.NoStreamResponseError from None
        except nats.js.errors.APIError as exc:
            if exc.err_code == WRONG_LAST_SEQUENCE_ERR:
                raise WrongLastSequence(
                    f"{subject}: expected last sequence {expected_last_subject_seq}: "
                    f"{exc.description}"
                ) from exc
            raise
        duplicate = bool(ack.get("duplicate"))
        if not duplicate:
            _count_published(subject)
        return Published(seq=int(ack["seq"]), duplicate=duplicate)

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
