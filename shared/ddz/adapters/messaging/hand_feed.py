"""Hands followed from the bus: each hand's state folded from its events, in order.

The table and bot services both keep, per hand in play, the ``HandState`` folded from
every event of the hand (public and internal, from a durable consumer) and the hand's
stream version (which also counts ``CommandRejected``, which the state never folds).

``HandFeed.follow(durable)`` subscribes it to every event (a durable pull consumer,
each message acked on its own once applied, so none is lost between delivery and ack;
``healthy`` says whether it is following right now). Events are applied strictly in
version order: a duplicate (an old version) is ignored, an event from the future is
held until the versions before it arrive. A hand first seen in the middle (a service
restarted mid-hand, a consumer created late) or a gap that does not fill is read back
from JetStream (``hand_stream.read``), the single source of truth the rules service
writes to. ``on_change`` is called after each batch of newly applied events; ``learn``
applies the events a call returned, ahead of the consumer (and ``hold``/``release``
keep what the bus brings of a hand while such a call is in flight).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

import nats.errors
import nats.js.errors
import structlog
from nats.aio.msg import Msg
from nats.js.api import ConsumerInfo

from ddz.adapters.codec import CodecError, parse_envelope
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import Delivery, DeliveryTokens, Reject, delivery_from
from ddz.adapters.messaging.hand_reads import Verdict, entry_of
from ddz.adapters.messaging.pulls import PullLost, StreamingPull
from ddz.adapters.messaging.subjects import ALL_SUBJECTS, split_subject, stream_parts
from ddz.adapters.security.event_signing import BadEvent, EventKeyring
from ddz.adapters.telemetry import metrics, tracing
from ddz.application.hand_fold import Entry, HandFold, OnChange
from ddz.application.tasks import cancel_and_wait
from ddz.v1 import envelope_pb2

log = structlog.get_logger("ddz.hand_feed")

WINDOW = 256
"""Messages delivered and not yet acked at most (``StreamingPull``'s window)."""
HEARTBEAT = 1.0
"""Seconds between the server's idle heartbeats on the feed's pull requests: a silence
of two (a dropped connection, a deleted consumer) is noticed within about 2.5 s."""
IDLE_WAIT = 1.0
"""Seconds the loop waits for a message before it looks at its connection again."""
ACK_WAIT = 10.0
"""Seconds JetStream waits for a message's ack before delivering it again: what a
message costs that was sent to a connection that dropped, or to a process that died,
before it was acked."""
MAX_ACK_PENDING = 20_000
RETRY_DELAY = 0.5
"""Seconds, times the delivery count, before a failed message comes again."""
MAX_ATTEMPTS = 5
"""Deliveries of a failing message before it is terminated (its hand is read back from
the bus on its next event, or by the bot's watchdog)."""
FAILURE_PAUSE = 0.5
"""Seconds between looks at the server while it cannot be reached."""

GAP_WAIT = 0.5
"""Seconds an out-of-order event may wait for the versions before it (a redelivery)
before the hand is read back from JetStream."""


class HandFeed:
    """Every hand the consumer has seen, folded. ``keep_ended`` finished hands stay
    in memory (most recent first) for late readers; older ones are dropped and their
    ids remembered, so a straggling event of a finished hand is ignored."""

    def __init__(
        self,
        bus: EventBus,
        *,
        keyring: EventKeyring,
        keep_log: bool = False,
        keep_ended: int = 1000,
        on_change: OnChange | None = None,
        accept: Callable[[str], bool] | None = None,
        archive: hand_stream.HandArchive | None = None,
    ) -> None:
        self.bus = bus
        self.keyring = keyring  # every event folded is verified with it (event_signing)
        self.archive = archive  # where a hand older than the bus keeps is read
        self.keep_log = keep_log
        self.keep_ended = keep_ended
        self.on_change = on_change
        self.accept = accept or (lambda _hand_id: True)
        self.hands: dict[str, HandFold] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()  # ended hands, oldest first
        self._kept: OrderedDict[str, None] = OrderedDict()  # those still in ``hands``
        self._repairs: dict[str, asyncio.Task[None]] = {}
        self._durable = ""
        self._from_now = False
        self._inactive_threshold: float | None = None
        self._filters = [ALL_SUBJECTS]
        self._pull: StreamingPull | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._fetching = False
        self._failure: str | None = None  # why the last fetch failed; None: it did not
        self._next_seq = 0  # the stream sequence after the last message settled
        self._nakked: set[int] = set()  # sequences handed back, not yet delivered again
        self._holding: dict[str, list[bytes]] = {}  # hands whose events wait for an answer

    def get(self, hand_id: str) -> HandFold | None:
        return self.hands.get(hand_id)

    def drop_refused(self) -> int:
        """Drop the folds of hands ``accept`` no longer takes (another instance plays
        them now; taken back, they are read again from the bus). How many."""
        gone = [hand_id for hand_id in self.hands if not self.accept(hand_id)]
        for hand_id in gone:
            del self.hands[hand_id]
            self._kept.pop(hand_id, None)
        return len(gone)

    def forget(self, hand_id: str) -> None:
        """Drop an ended hand's fold now (nobody here needs it: its table is gone); it
        is retired as any older ended hand, and ``load`` reads it again if asked."""
        fold = self.hands.get(hand_id)
        if fold is not None and fold.over:
            del self.hands[hand_id]
            self._kept.pop(hand_id, None)
            self._ended[hand_id] = None

    async def handle(self, delivery: Delivery) -> None:
        """A handler for ``EventBus.subscribe_durable`` (idempotent)."""
        await self.handle_data(delivery.data)

    async def handle_data(self, data: bytes) -> None:
        """Apply one envelope from the bus (idempotent: a redelivery changes nothing)."""
        try:
            envelope = parse_envelope(data)
            category, hand_id = stream_parts(envelope.stream_id)
        except ValueError as exc:  # CodecError is a ValueError
            raise Reject(f"not an event envelope: {exc}") from None
        if category != hand_stream.HAND or not self.accept(hand_id):
            return
        fold = self.hands.get(hand_id)
        if fold is None and hand_id in self._ended:
            return  # a straggler of a finished hand that is no longer kept
        if fold is not None and envelope.stream_version <= fold.version:
            return  # already applied (learned from a call's answer, or redelivered)
        held = self._holding.get(hand_id)
        if held is not None:
            held.append(data)  # opened once the answer in flight is learned (``release``)
            return
        try:
            # Verified only now, when it would be folded: what is ignored costs nothing.
            self.keyring.check(data, envelope)
        except BadEvent as exc:  # not signed by its producer: never folded
            log.error("event_refused", why=exc.why, reason=str(exc))
            raise Reject(f"not signed by its producer: {exc}") from None
        try:
            entry = entry_of(envelope)
        except CodecError as exc:
            raise Reject(str(exc)) from None
        await self.offer(hand_id, entry)

    # -- following the bus -------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        """Following the bus right now: the fetch loop runs, connected, and its last
        fetch did not fail (its pull requests alive, or its consumer found or made
        again after they were lost)."""
        return self._task is not None and not self._task.done() and self._failure is None

    async def follow(
        self,
        durable: str,
        *,
        from_now: bool = False,
        inactive_threshold: float | None = None,
        filters: Sequence[str] = (ALL_SUBJECTS,),
    ) -> None:
        """Follow every event (or those ``filters`` match) with the durable pull
        consumer ``durable``.

        The consumer is kept across restarts (a restarted service resumes where it
        left off, and what it had been sent but not acknowledged comes again). Each
        message is acked on its own once applied: a message sent to a connection that
        dropped, or to a process that died, before its ack is delivered again after
        ``ACK_WAIT``, so no hand waits for an event that was never applied. A message
        that fails is nak'ed and comes again; after ``MAX_ATTEMPTS`` it is terminated
        and its hand is read back from the bus on its next event. A consumer the
        server lost (deleted, or the server restarted without its store) is created
        again, from where this feed had got to.

        ``from_now``: a consumer made now starts at the present, not at the oldest
        event kept (an instance's own consumer: what was before it is read from the
        bus hand by hand as needed); ``inactive_threshold``: the server deletes the
        consumer that long after its last pull (its instance is gone).
        """
        self._durable = durable
        self._from_now = from_now
        self._inactive_threshold = inactive_threshold
        self._filters = list(filters)
        await self._ensure_consumer()
        self._pull = StreamingPull(self.bus, durable, window=WINDOW, heartbeat=HEARTBEAT)
        await self._pull.start()
        self._stopping.clear()
        self._failure = None
        self._task = asyncio.create_task(self._fetch_loop(), name=f"feed:{durable}")
        metrics.follow_hands(durable, self.in_play)

    async def refilter(self, filters: Sequence[str]) -> None:
        """Follow what ``filters`` match from now on (the consumer updated in place: it
        goes on from where it stands, its pending messages still come)."""
        self._filters = list(filters)
        await self._consumer()

    def in_play(self) -> int:
        """Hands followed that are not over (``ddz_hands_in_play``)."""
        return sum(1 for fold in list(self.hands.values()) if not fold.over)

    async def _consumer(self, resume_at: int | None = None) -> ConsumerInfo:
        return await self.bus.ensure_pull_consumer(
            self._durable, self._filters, ack_wait=ACK_WAIT, max_ack_pending=MAX_ACK_PENDING,
            resume_at=resume_at, from_now=self._from_now,
            inactive_threshold=self._inactive_threshold,
        )  # fmt: skip

    async def _ensure_consumer(self, resume_at: int | None = None) -> None:
        info = await self._consumer(resume_at)
        floor = info.ack_floor.stream_seq if info.ack_floor is not None else 0
        self._next_seq = (floor or 0) + 1
        self._nakked.clear()  # what was handed back comes again from this consumer

    @property
    def _resume_at(self) -> int:
        """The first stream sequence not yet settled for good: where a consumer made
        again starts (a message nak'ed and not yet redelivered is not settled)."""
        return min(self._nakked, default=self._next_seq)

    async def _fetch_loop(self) -> None:
        assert self._pull is not None
        try:
            while not self._stopping.is_set():
                for msg in await self._fetch(self._pull):
                    delivery = delivery_from(msg)
                    metrics.event_consumed(self._durable, delivery)
                    await self._settle(msg, delivery, await self._verdict(msg, delivery))
        finally:
            await self._pull.stop()

    async def _fetch(self, pull: StreamingPull) -> list[Msg]:
        """What has arrived, waiting up to ``IDLE_WAIT`` for it. Pull requests that are
        lost (no heartbeat, the consumer deleted) send the loop to ``_recover``."""
        self._fetching = True  # no message in hand: close() may cancel
        try:
            if self.bus.nc.is_closed or self.bus.nc.is_draining:
                self._stopping.set()  # the bus is closing: so is the feed
                return []
            try:
                messages = await pull.next_batch(IDLE_WAIT)
            except (PullLost, nats.errors.Error) as exc:
                # Asked again on the next call; whether that is a failure (no server, no
                # consumer) is for _recover to say.
                log.debug("pull_lost", durable=self._durable, why=str(exc))
                await self._recover()
                return []
            if messages or self.bus.nc.is_connected:
                self._recovered()
            else:
                self._failing("not connected to NATS")
            return messages
        finally:
            self._fetching = False

    async def _recover(self) -> None:
        """The pull was lost: look at the consumer. Not connected, or the consumer cannot
        be looked up, is a failure (paused on, logged once); a consumer that is gone is
        created again from ``_resume_at``."""
        try:
            if not self.bus.nc.is_connected:
                raise ConnectionError("not connected to NATS")
            try:
                await self.bus.js.consumer_info(self.bus.stream, self._durable)
            except nats.js.errors.NotFoundError:
                log.warning("consumer_lost", durable=self._durable, resume_at=self._resume_at)
                await self._ensure_consumer(resume_at=self._resume_at)
        except (nats.errors.Error, OSError, TimeoutError) as exc:
            self._failing(f"consumer: {exc!r}")
        else:
            self._recovered()
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FAILURE_PAUSE):
                await self._stopping.wait()

    def _failing(self, why: str) -> None:
        if self._failure is None:
            log.warning("feed_failing", durable=self._durable, error=why)
        self._failure = why

    def _recovered(self) -> None:
        if self._failure is not None:
            log.info("feed_recovered", durable=self._durable, after=self._failure)
        self._failure = None

    async def _verdict(self, msg: Msg, delivery: DeliveryTokens) -> Verdict:
        """Apply one message; what to tell JetStream about it."""
        if not self._wanted_subject(msg.subject):
            return Verdict.ACK  # another instance's hand: not even opened
        # In its producer's trace: what the message leads to here (a view sent, a bot's
        # move) and what is logged about it are part of the move that published it.
        with tracing.consuming(self._durable, msg.subject, msg.headers):
            return await self._applied(msg, delivery)

    async def _applied(self, msg: Msg, delivery: DeliveryTokens) -> Verdict:
        try:
            await self.handle_data(msg.data)
        except Reject as exc:
            log.error("message_rejected", durable=self._durable, subject=msg.subject,
                      reason=str(exc))  # fmt: skip
            return Verdict.TERM
        except Exception:
            attempts = delivery.delivered
            give_up = attempts >= MAX_ATTEMPTS
            log.exception("message_failed", durable=self._durable, subject=msg.subject,
                          attempts=attempts, given_up=give_up)  # fmt: skip
            return Verdict.TERM if give_up else Verdict.NAK
        return Verdict.ACK

    def _wanted_subject(self, subject: str) -> bool:
        """Whether a message may be for a hand ``accept`` takes, from its subject alone
        (``ddz.v1[.internal].hand.<bucket>.<id>.<type>``): the hands of other bot
        instances are acked without being opened (those a consumer's filter let through
        while it was being changed). Anything else (not a hand's subject) is opened: the
        envelope decides, as in ``handle_data``."""
        parts = split_subject(subject)
        if parts is None or parts.category != hand_stream.HAND:
            return True
        return self.accept(parts.entity_id)

    async def _settle(self, msg: Msg, delivery: DeliveryTokens, verdict: Verdict) -> None:
        seq = delivery.stream_seq
        self._next_seq = max(self._next_seq, seq + 1)
        try:
            if verdict is Verdict.ACK:
                self._nakked.discard(seq)
                await msg.ack()
            elif verdict is Verdict.NAK:
                self._nakked.add(seq)
                await msg.nak(delay=RETRY_DELAY * delivery.delivered)
            else:
                self._nakked.discard(seq)
                await msg.term()
        except nats.errors.Error as exc:
            # Not sent (the connection is gone): JetStream delivers it again after
            # ACK_WAIT, and a redelivery of an applied event changes nothing.
            self._failing(f"ack: {exc!r}")

    async def offer(self, hand_id: str, entry: Entry) -> None:
        """Apply an event of the hand (from the consumer), reading the hand from the bus
        first when this is the first event seen and not the hand's first."""
        fold = self.hands.get(hand_id)
        if fold is None:
            if entry.version != 1:
                # First seen mid-hand: everything before it is on the bus (or, aged
                # out of it, in the archive).
                try:
                    fold = await self.load(hand_id)
                except hand_stream.HandAgedOut as exc:
                    # Older than the bus keeps, and no archive: long over or abandoned
                    # (a consumer that starts at the oldest message still kept).
                    log.info("hand_aged_out", hand_id=hand_id, reason=exc.message)
                    return
                if fold is None:
                    return
            else:
                fold = self.hands[hand_id] = HandFold(hand_id, self.keep_log)
        await self._offer(fold, entry)

    def hold(self, hand_id: str) -> None:
        """Keep the hand's events from the bus unopened until ``release``: a call that
        will answer with the events it makes (``learn``) is in flight on the hand, and
        what the bus brings first is mostly those same events. Held messages are acked
        as they come (as an event learned first is): a process killed meanwhile reads
        its unfinished hands back from the bus when it starts again."""
        self._holding.setdefault(hand_id, [])

    async def release(self, hand_id: str) -> None:
        """Apply what was held since ``hold``, after the answer was learned: its own
        events are then skipped without being verified or decoded; any other (a hidden
        event, another seat's) is verified and folded as it would have been. One that
        fails has the hand read back from the bus."""
        for data in self._holding.pop(hand_id, ()):
            try:
                await self.handle_data(data)
            except Reject as exc:  # never folded, as on the bus
                log.error("message_rejected", durable=self._durable, reason=str(exc))
            except Exception:
                log.exception("held_message_failed", durable=self._durable, hand_id=hand_id)
                with contextlib.suppress(Exception):
                    await self.load(hand_id)

    async def learn(self, hand_id: str, envelopes: Iterable[envelope_pb2.EventEnvelope]) -> None:
        """Apply events a call answered with (a decision's public events), ahead of the
        consumer. Only for a hand already followed: anything else the consumer brings.
        Events the consumer has already brought are skipped without being decoded."""
        fold = self.hands.get(hand_id)
        for envelope in envelopes:
            if fold is None and envelope.stream_version == 1 and hand_id not in self._ended:
                fold = self.hands[hand_id] = HandFold(hand_id, self.keep_log)  # a deal's answer
            if fold is None or self.hands.get(hand_id) is not fold:
                return
            if envelope.stream_version > fold.version:
                await self._offer(fold, entry_of(envelope))

    async def _offer(self, fold: HandFold, entry: Entry) -> None:
        applied = fold.offer(entry)
        if fold.pending and fold.hand_id not in self._repairs:
            self._repairs[fold.hand_id] = asyncio.create_task(self._repair_later(fold.hand_id))
        if applied:
            await self._changed(fold, applied)

    async def load(self, hand_id: str) -> HandFold | None:
        """Read the hand from JetStream into its fold (None: the bus has no such hand);
        its events the bus no longer keeps from ``archive``, else ``HandAgedOut``."""
        read, _cursor = await hand_stream.read(
            self.bus, hand_id, self.archive, keyring=self.keyring
        )
        if not read:
            return None
        fold = self.hands.get(hand_id)
        if fold is None:
            fold = self.hands[hand_id] = HandFold(hand_id, self.keep_log)
        applied: list[Entry] = []
        for item in read:
            applied += fold.offer(
                Entry(int(item.envelope.stream_version), item.envelope, item.event)
            )
        if applied:
            await self._changed(fold, applied)
        return fold

    async def _repair_later(self, hand_id: str) -> None:
        try:
            await asyncio.sleep(GAP_WAIT)
            fold = self.hands.get(hand_id)
            if fold is not None and fold.pending:
                log.warning("hand_gap", hand_id=hand_id, version=fold.version,
                            held=sorted(fold.pending))  # fmt: skip
                await self.load(hand_id)
        except Exception:
            log.exception("hand_repair_failed", hand_id=hand_id)
        finally:
            self._repairs.pop(hand_id, None)

    async def _changed(self, fold: HandFold, applied: list[Entry]) -> None:
        async with fold.changed:
            fold.changed.notify_all()
        if self.on_change is not None:
            result = self.on_change(fold, applied)
            if result is not None:
                await result
        if fold.over:
            self._retire(fold.hand_id)

    def _retire(self, hand_id: str) -> None:
        """The hand is over: its fold is kept among the ``keep_ended`` most recent, and
        its id remembered longer. Constant time: every hand's end passes here."""
        for ended in (self._ended, self._kept):
            ended[hand_id] = None
            ended.move_to_end(hand_id)
        while len(self._kept) > self.keep_ended:
            oldest, _ = self._kept.popitem(last=False)
            self.hands.pop(oldest, None)
        while len(self._ended) > max(10_000, 2 * self.keep_ended):
            self._ended.popitem(last=False)

    async def close(self) -> None:
        """Stop following (a batch in hand is finished and acked first), and stop
        background repairs."""
        self._stopping.set()
        if self._durable:
            metrics.unfollow_hands(self._durable)
        if self._task is not None:
            if self._fetching:  # waiting for messages, none in hand
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await cancel_and_wait(list(self._repairs.values()))
        self._repairs.clear()
