"""The recorder's durable consumer: every event on ``ddz.v1.>`` to ``handlers.Record``.

Its own pull loop (not ``EventBus.subscribe_durable``) so that a fetched batch is
stored together (one store transaction for the batch instead of one per event). What
``Record`` decides per message is done on the bus: ``STORED`` is acked, ``RETRY`` nak'ed
with a growing delay, ``REFUSED`` terminated with an error log line (it stays on the
bus as evidence). Acked only after the write committed, so a crash or restart means
redelivery, never loss.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

import nats.errors
import nats.js.errors
import structlog
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import delivery_of
from ddz.adapters.messaging.pulls import BatchPull, DurablePull
from ddz.adapters.messaging.subjects import ALL_SUBJECTS
from ddz.adapters.telemetry import metrics, tracing
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from ..use_cases.handlers import Outcome, Record, Verdict

log = structlog.get_logger("ddz.recorder")

DURABLE = "recorder"
RETRY_DELAY = 0.5  # seconds, times the delivery count (capped)
MAX_RETRY_DELAY = 10.0


@dataclass
class StoreConsumer:
    bus: EventBus
    record: Record
    durable: str = DURABLE
    batch: int = 256
    idle_fetch_timeout: float = 2.0
    linger: float = 0.02
    """After a fetch that did not fill a batch, wait this long before the next one, so
    the events of that time are stored together: one fetch and one transaction per
    stream for many events instead of one each (events arrive one per move, and a
    fetch otherwise returns about one). Only when events are stored is delayed;
    nothing in play waits for the store."""
    _task: asyncio.Task[None] | None = None
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _fetching: bool = False
    _pull: DurablePull | None = None

    @property
    def healthy(self) -> bool:
        """The loop runs and its consumer answers (``DurablePull`` re-creates a consumer
        the server lost)."""
        running = self._task is not None and not self._task.done()
        return running and self._pull is not None and self._pull.healthy

    async def start(self, *, take_over: bool = False) -> None:
        """Fetch and store. ``take_over``: this writer follows another that may have
        died holding messages (the recorder's lease changed hands): the consumer is
        made again from its acknowledged floor, so what the last writer had fetched
        and not acknowledged comes at once instead of after ``ack_wait`` (what it had
        acknowledged beyond the floor comes again too, and is a no-op in the store)."""
        config = ConsumerConfig(
            durable_name=self.durable,
            filter_subject=ALL_SUBJECTS,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            max_deliver=-1,
            ack_wait=60.0,
            max_ack_pending=20_000,
        )
        await self._start_point(config, take_over=take_over)
        pull = self._pull = await DurablePull.bind(self.bus, config, retry_delay=RETRY_DELAY)
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(pull), name=f"durable:{self.durable}")

    async def _start_point(self, config: ConsumerConfig, *, take_over: bool) -> None:
        """Where ``config``'s consumer starts. A new one: the start of the stream. One
        that exists goes on as it is, bound with the start it was made with (the server
        refuses to change an existing consumer's deliver policy). Taken over with
        messages held by the last writer: made again from its acknowledged floor."""
        js, stream = self.bus.js, self.bus.stream
        try:
            info = await js.consumer_info(stream, self.durable)
        except nats.js.errors.NotFoundError:
            return  # none yet: made from the start of the stream
        floor = info.ack_floor.stream_seq if info.ack_floor is not None else 0
        if not (take_over and info.num_ack_pending):
            config.deliver_policy = info.config.deliver_policy
            config.opt_start_seq = info.config.opt_start_seq
            return
        await js.delete_consumer(stream, self.durable)
        if floor:
            config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            config.opt_start_seq = floor + 1
        log.info("consumer_taken_over", durable=self.durable, resume_at=(floor or 0) + 1,
                 unacked=info.num_ack_pending)  # fmt: skip

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Finish the batch in hand, then stop fetching (unacked messages are redelivered)."""
        self._stopping.set()
        if self._task is not None:
            if self._fetching:  # waiting for messages, none in hand: no need to wait
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self, pull: DurablePull) -> None:
        # One pull request per batch, read by a callback (``BatchPull``): no task per
        # message as nats-py's ``fetch`` makes; ``pull`` keeps the consumer itself (made
        # again if the server lost it).
        batches = BatchPull(self.bus, self.durable)
        await batches.start()
        try:
            while not self._stopping.is_set():
                self._fetching = True
                try:
                    messages = await batches.fetch(self.batch, self.idle_fetch_timeout)
                    if batches.lost and not await pull.verify():
                        await asyncio.sleep(RETRY_DELAY)
                except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                    return
                finally:
                    self._fetching = False
                if not messages:
                    continue
                await self._handle(messages)
                if self.bus.nc.is_closed:
                    return  # the connection went with the batch's replies
                if len(messages) < self.batch and self.linger > 0:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.linger):
                            await self._stopping.wait()
        finally:
            await batches.stop()
            await pull.unsubscribe()

    @property
    def stored(self) -> int:
        """Events written (not counting redeliveries)."""
        return self.record.stored

    async def _handle(self, messages: list[Msg]) -> None:
        for msg in messages:
            metrics.event_consumed(self.durable, delivery_of(msg.reply))
        # One write serves the whole batch: its span links every message's producer, and
        # each message's own span (its hop in its move's trace) lasts until it is stored.
        with tracing.consuming_batch(self.durable, [msg.headers for msg in messages]):
            hops = [tracing.message_span(self.durable, m.subject, m.headers) for m in messages]
            try:
                outcomes = await self.record(
                    [msg.data for msg in messages],
                    [tracing.trace_id_of(msg.headers) for msg in messages],
                )
            finally:
                for hop in hops:
                    if hop is not None:
                        hop.end()
            for msg, outcome in zip(messages, outcomes, strict=True):
                await _settle(msg, outcome)


async def _settle(msg: Msg, outcome: Outcome) -> None:
    """Tell the bus; a reply the connection can no longer carry is not an error here:
    JetStream delivers the message again after ``ack_wait`` (or at once to the next
    writer, which takes the consumer over), and storing it again is a no-op."""
    try:
        await _reply(msg, outcome)
    except nats.errors.Error as exc:
        log.warning("ack_not_sent", error=type(exc).__name__)


async def _reply(msg: Msg, outcome: Outcome) -> None:
    if outcome.verdict is Verdict.STORED:
        await msg.ack()
    elif outcome.verdict is Verdict.RETRY:
        attempts = msg.metadata.num_delivered
        log.info("event_retry", stream_id=outcome.stream_id, version=outcome.version,
                 why=outcome.why, attempts=attempts)  # fmt: skip
        await msg.nak(delay=min(MAX_RETRY_DELAY, RETRY_DELAY * attempts))
    else:
        log.error(
            "event_refused",
            stream_id=outcome.stream_id,
            version=outcome.version,
            stream_seq=msg.metadata.sequence.stream,
            why=outcome.why,
        )
        await msg.term()
