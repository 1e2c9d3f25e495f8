"""Hands followed from the bus: each hand's state folded from its events, in order.

The table and bot services both keep, per hand in play, the ``HandState`` folded from
every event of the hand (public and internal, from a durable consumer) and the hand's
stream version (which also counts ``CommandRejected``, which the state never folds).

``HandFeed.follow(durable)`` subscribes it to every event (a durable push consumer).
Events are applied strictly in version order: a duplicate (an old version) is ignored,
an event from the future is held until the versions before it arrive. A hand first
seen in the middle (a service restarted mid-hand, a consumer created late) or a gap
that does not fill is read back from JetStream (``hand_stream.read``), the single
source of truth the rules service writes to. ``on_change`` is called after each batch
of newly applied events; ``learn`` applies the events a call returned, ahead of the
consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import nats.errors
import nats.js.errors
import structlog
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from ddz.adapters import hand_stream
from ddz.adapters.bus import ALL_SUBJECTS, Delivery, EventBus, Reject, stream_parts
from ddz.adapters.codec import CodecError, decode_event, parse_envelope
from ddz.domain.hand import CommandRejected, HandState, Phase, Recorded, evolve
from ddz.domain.ruleset import WildcardDraw
from ddz.v1 import envelope_pb2

log = structlog.get_logger("ddz.hand_feed")

DELIVER_PREFIX = "_ddz.deliver"
"""Push consumers deliver to ``_ddz.deliver.<durable>``: outside the stream's subjects."""

GAP_WAIT = 0.5
"""Seconds an out-of-order event may wait for the versions before it (a redelivery)
before the hand is read back from JetStream."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One recorded event of a hand, as applied."""

    version: int
    envelope: envelope_pb2.EventEnvelope
    event: Recorded

    @property
    def hidden(self) -> bool:
        return bool(self.event.HIDDEN)

    @property
    def rejected_seat(self) -> int | None:
        """The seat whose command was refused, for a ``CommandRejected``."""
        return self.event.seat if isinstance(self.event, CommandRejected) else None


@dataclass
class HandFold:
    """One hand: its state, its stream version, and (optionally) every entry."""

    hand_id: str
    keep_log: bool = False
    state: HandState = field(default_factory=HandState)
    version: int = 0
    log: list[Entry] = field(default_factory=list)
    pending: dict[int, Entry] = field(default_factory=dict)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def over(self) -> bool:
        """The hand has ended and its last event (the seed's reveal) is in."""
        return self.state.phase is Phase.ENDED and self.state.seed is not None

    def offer(self, entry: Entry) -> list[Entry]:
        """Apply ``entry`` and any held entries that now follow; return what was applied."""
        if entry.version <= self.version:
            return []
        self.pending[entry.version] = entry
        applied: list[Entry] = []
        while self.version + 1 in self.pending:
            ready = self.pending.pop(self.version + 1)
            self._apply(ready)
            applied.append(ready)
        return applied

    def _apply(self, entry: Entry) -> None:
        if not isinstance(entry.event, CommandRejected):
            self.state = evolve(self.state, entry.event)
        self.version = entry.version
        if self.keep_log:
            self.log.append(entry)

    def entries_after(self, version: int) -> list[Entry]:
        """Logged entries with a version above ``version`` (``keep_log`` only)."""
        return self.log[version:] if 0 <= version < len(self.log) else []

    async def wait_for(self, version: int, timeout: float) -> bool:
        """Wait until the fold has reached ``version``; False on timeout."""
        if self.version >= version:
            return True
        async with self.changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.changed.wait_for(lambda: self.version >= version), timeout
                )
        return self.version >= version


def deal_complete(state: HandState) -> bool:
    """Whether every event of the deal is in. A deal is several events published one
    after another (by the dealer, or by the rules for a re-deal): the cards, then the
    draws due before bidding (§5) and the hands shown before the deal (§6). Until the
    last is in, a bid would race the deal's writer for the hand's next version."""
    if state.phase is not Phase.BIDDING:
        return True
    due = sum(1 for draw in state.rules.wildcard_draws if draw is WildcardDraw.BEFORE_BIDDING)
    if len(state.wild) < due:
        return False
    shown = {event.seat for event in state.shown if event.when == "before_deal"}
    return set(state.show_before_deal) <= shown


def entry_of(envelope: envelope_pb2.EventEnvelope) -> Entry:
    """The entry of a parsed envelope (``CodecError`` if its event does not decode)."""
    event = decode_event(envelope.type, envelope.type_version, envelope.payload)
    return Entry(int(envelope.stream_version), envelope, event)


async def read_fold(bus: EventBus, hand_id: str, *, keep_log: bool = False) -> HandFold | None:
    """The hand read straight from JetStream, folded (None: no such hand on the bus).
    ``ValueError`` when ``hand_id`` cannot be a hand id."""
    read, _cursor = await hand_stream.read(bus, hand_id)
    if not read:
        return None
    fold = HandFold(hand_id, keep_log)
    for item in read:
        fold.offer(Entry(int(item.envelope.stream_version), item.envelope, item.event))
    return fold


OnChange = Callable[[HandFold, list[Entry]], Awaitable[None] | None]


class HandFeed:
    """Every hand the consumer has seen, folded. ``keep_ended`` finished hands stay
    in memory (most recent first) for late readers; older ones are dropped and their
    ids remembered, so a straggling event of a finished hand is ignored."""

    def __init__(
        self,
        bus: EventBus,
        *,
        keep_log: bool = False,
        keep_ended: int = 1000,
        on_change: OnChange | None = None,
        accept: Callable[[str], bool] | None = None,
    ) -> None:
        self.bus = bus
        self.keep_log = keep_log
        self.keep_ended = keep_ended
        self.on_change = on_change
        self.accept = accept or (lambda _hand_id: True)
        self.hands: dict[str, HandFold] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._repairs: dict[str, asyncio.Task[None]] = {}
        self._subscription: Any = None
        self._acker: asyncio.Task[None] | None = None
        self._unacked: Msg | None = None
        self._since_ack = 0
        self._ack_every = 64

    def get(self, hand_id: str) -> HandFold | None:
        return self.hands.get(hand_id)

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
        try:
            entry = entry_of(envelope)
        except CodecError as exc:
            raise Reject(str(exc)) from None
        await self.offer(hand_id, entry)

    # -- following the bus -------------------------------------------------------------

    async def follow(self, durable: str, *, ack_every: int = 64, ack_interval: float = 0.2) -> None:
        """Follow every event with the durable push consumer ``durable``.

        The consumer is created explicitly (and kept across restarts: a restarted
        service resumes where it left off) and pushes messages as they are stored,
        with no pull round trip per batch. Acks are cumulative (``AckPolicy.ALL``):
        the fold is in memory, so "acked after our own write" means after ``offer``;
        acking every ``ack_every`` messages or ``ack_interval`` seconds keeps the ack
        traffic far below one publish per event. A message that fails is logged and
        left behind: the hand it belongs to is read back from the bus on its next
        event (``load``), so a projection never stays wrong.
        """
        config = ConsumerConfig(
            durable_name=durable,
            deliver_subject=f"{DELIVER_PREFIX}.{durable}",
            filter_subject=ALL_SUBJECTS,
            ack_policy=AckPolicy.ALL,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=30.0,
            max_ack_pending=20_000,
        )
        try:
            await self.bus.js.add_consumer(self.bus.stream, config)
        except nats.js.errors.APIError as exc:
            # An older consumer of this name with settings that cannot be changed in
            # place (e.g. a pull consumer): the fold is rebuilt from the bus anyway.
            log.warning("consumer_recreated", durable=durable, error=exc.description)
            await self.bus.js.delete_consumer(self.bus.stream, durable)
            await self.bus.js.add_consumer(self.bus.stream, config)
        self._ack_every = ack_every
        self._subscription = await self.bus.js.subscribe_bind(
            stream=self.bus.stream, config=config, consumer=durable,
            cb=self._on_message, manual_ack=True,
        )  # fmt: skip
        self._acker = asyncio.create_task(self._ack_loop(ack_interval), name=f"ack:{durable}")

    async def _on_message(self, msg: Msg) -> None:
        try:
            await self.handle_data(msg.data)
        except Reject as exc:
            log.error("message_rejected", subject=msg.subject, reason=str(exc))
        except Exception:
            log.exception("message_failed", subject=msg.subject)
        self._unacked = msg
        self._since_ack += 1
        if self._since_ack >= self._ack_every:
            await self._ack()

    async def _ack(self) -> None:
        msg, self._unacked, self._since_ack = self._unacked, None, 0
        if msg is not None:
            with contextlib.suppress(nats.errors.Error):
                await msg.ack()

    async def _ack_loop(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            await self._ack()

    async def offer(self, hand_id: str, entry: Entry) -> None:
        """Apply an event of the hand (from the consumer), reading the hand from the bus
        first when this is the first event seen and not the hand's first."""
        fold = self.hands.get(hand_id)
        if fold is None:
            if entry.version != 1:
                # First seen mid-hand: everything before it is on the bus.
                fold = await self.load(hand_id)
                if fold is None:
                    return
            else:
                fold = self.hands[hand_id] = HandFold(hand_id, self.keep_log)
        await self._offer(fold, entry)

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
        """Read the hand from JetStream into its fold (None: the bus has no such hand)."""
        read, _cursor = await hand_stream.read(self.bus, hand_id)
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
        self._ended[hand_id] = None
        self._ended.move_to_end(hand_id)
        ended_folds = [h for h in self._ended if h in self.hands]
        for old in ended_folds[: max(0, len(ended_folds) - self.keep_ended)]:
            del self.hands[old]
        while len(self._ended) > max(10_000, 2 * self.keep_ended):
            self._ended.popitem(last=False)

    async def close(self) -> None:
        """Stop following (acking what was handled), and stop background repairs."""
        if self._subscription is not None:
            with contextlib.suppress(nats.errors.Error):
                await self._subscription.unsubscribe()
            self._subscription = None
        if self._acker is not None:
            self._acker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._acker
            self._acker = None
        await self._ack()
        for task in list(self._repairs.values()):
            task.cancel()
        for task in list(self._repairs.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._repairs.clear()
