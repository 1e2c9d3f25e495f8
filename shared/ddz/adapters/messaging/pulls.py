"""Pull consumers: a durable one that outlives the server forgetting it
(``DurablePull``), the fetch loop of a durable subscription over it, and one read as a
stream of messages (``StreamingPull``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from typing import Any

import nats.errors
import nats.js.errors
import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from ddz.adapters.messaging.delivery import Delivery, Handler, Reject, delivery_from
from ddz.adapters.messaging.server import STREAM_NOT_FOUND_ERR, BusError

# The bus's connection and stream upkeep, which these bind to (EventBus is one).
from ddz.adapters.messaging.stream_upkeep import StreamUpkeep
from ddz.adapters.telemetry import metrics, tracing

log = structlog.get_logger("ddz.bus")

MAX_RETRY_DELAY = 10.0
"""Seconds at most before a failed message comes again (the delay grows with each try),
so work resumes soon after a long outage of what the handler needs."""


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
        bus: StreamUpkeep,
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
        cls, bus: StreamUpkeep, config: ConsumerConfig, *, retry_delay: float = 0.5
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


class _InboxPull:
    """What both pull readers share: the consumer's next-message subject, an inbox of
    their own, and a subscription on it whose callback (``_on_message``) reads every
    reply, message or status, as it comes."""

    STATUS = "Status"
    DESCRIPTION = "Description"

    def __init__(self, bus: StreamUpkeep, durable: str) -> None:
        self.bus = bus
        self.durable = durable
        self._next = f"$JS.API.CONSUMER.MSG.NEXT.{bus.stream}.{durable}"
        self._inbox = bus.nc.new_inbox()
        self._sub: Any = None
        self._arrived: list[Msg] = []

    async def start(self) -> None:
        self._sub = await self.bus.nc.subscribe(
            self._inbox, cb=self._on_message, pending_msgs_limit=-1, pending_bytes_limit=-1
        )

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    async def _on_message(self, msg: Msg) -> None:
        raise NotImplementedError


class StreamingPull(_InboxPull):
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

    PENDING = "Nats-Pending-Messages"

    def __init__(
        self,
        bus: StreamUpkeep,
        durable: str,
        *,
        window: int = 256,
        expires: float = 30.0,
        heartbeat: float = 1.0,
    ) -> None:
        super().__init__(bus, durable)
        self.window = window
        self.expires = expires
        self.heartbeat = heartbeat
        self._ready = asyncio.Event()
        self._outstanding = 0  # messages the requests still out may bring
        self._heard = 0.0  # loop time of the last message, heartbeat or request
        self._lost: str | None = None

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


class BatchPull(_InboxPull):
    """A durable pull consumer read a batch at a time, one pull request per batch: what
    is stored when it is asked for comes at once, in one burst (``no_wait``); when
    nothing is, the first that comes within ``timeout``. For a reader that lets
    messages gather between batches (the recorder): pull requests kept open
    (``StreamingPull``) would have each message sent, and read, on its own. Messages are
    read by a subscription callback into a list, not one ``next_msg`` task each as
    nats-py's ``fetch`` makes. A request that has to wait returns with its first message.
    Acks are the reader's.

    ``fetch`` returns ``[]`` after ``timeout`` with no answer at all, or when the server
    answers that it cannot serve the request (no consumer, JetStream away): ``lost`` is
    then True until the next answer, for the reader to look at its consumer."""

    ENDED = ("404", "408", "409")  # no messages, expired, or ended by the server
    MARGIN = 0.5  # seconds past a waiting request's expiry before it counts as unanswered

    def __init__(self, bus: StreamUpkeep, durable: str) -> None:
        super().__init__(bus, durable)
        self.lost = False
        self._wanted = 0  # messages the request in flight may still bring
        self._answered = asyncio.Event()  # the request in flight is over

    async def fetch(self, batch: int, timeout: float) -> list[Msg]:
        """Up to ``batch`` messages: those stored now, else those that come within
        ``timeout`` (``[]`` if none)."""
        if not self._arrived:  # (late messages of an earlier request come first)
            await self._ask({"batch": batch, "no_wait": True}, batch, timeout + self.MARGIN)
        if not self._arrived and not self.lost:
            # A waiting request ends at its first message: a lone event is not held back
            # until the batch fills or the request expires (the reader lingers after a
            # short batch to gather what follows). Messages the request still brings
            # after that are kept for the next fetch.
            request = {"batch": batch, "expires": int(timeout * 1e9)}
            await self._ask(request, 1, timeout + self.MARGIN)
        taken, self._arrived = self._arrived, []
        return taken

    async def _ask(self, request: dict[str, Any], wanted: int, patience: float) -> None:
        self._wanted = wanted
        self._answered.clear()
        await self.bus.nc.publish(self._next, json.dumps(request).encode(), reply=self._inbox)
        try:
            async with asyncio.timeout(patience):
                await self._answered.wait()
        except TimeoutError:
            self.lost = True  # no message and no status: the request went nowhere

    async def _on_message(self, msg: Msg) -> None:
        headers = msg.headers
        status = headers.get(self.STATUS) if headers else None
        if status is None:
            self._arrived.append(msg)
            self._wanted -= 1
            self.lost = False
            if self._wanted <= 0:
                self._answered.set()
            return
        if status == "100":
            return  # a heartbeat (none is asked for)
        assert headers is not None
        description = headers.get(self.DESCRIPTION, "").lower()
        self.lost = status not in self.ENDED or "deleted" in description
        self._answered.set()


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
