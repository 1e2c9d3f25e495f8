"""Settlement's durable consumer: each ``HandSettled`` into the balances projection.

Idempotent on the event id (``processed_events``, same transaction as the balances),
acked after the write. The players of a hand come from its ``HandStarted`` (JetStream,
else the event store); a hand whose start cannot be found yet is retried later.
"""

from __future__ import annotations

import asyncio

import nats.js.errors
import structlog
from ddz.adapters.bus import SUBJECT_ROOT, Delivery, EventBus, Reject, stream_parts, subject_for
from ddz.adapters.codec import CodecError, decode_envelope
from ddz.adapters.service_db.balances import BalanceProjection
from ddz.adapters.store import EventStore
from ddz.domain.hand.events import HandSettled, HandStarted

log = structlog.get_logger("ddz.settlement")

DURABLE = "settlement"
FILTER = f"{SUBJECT_ROOT}.hand.*.{HandSettled.TYPE}"
# Effectively never give up (EventBus terminates a message after max_deliver tries):
# a balance update must not be dropped because the database was down for a while.
MAX_DELIVER = 100_000


class SettlementConsumer:
    def __init__(self, bus: EventBus, projection: BalanceProjection, store: EventStore) -> None:
        self.bus = bus
        self.projection = projection
        self.store = store
        self.applied = 0

    async def start(self, durable: str = DURABLE) -> None:
        await self.bus.subscribe_durable(
            durable, FILTER, self.handle, max_deliver=MAX_DELIVER, retry_delay=0.5
        )

    async def handle(self, delivery: Delivery) -> None:
        try:
            envelope, event = decode_envelope(delivery.data)
        except CodecError as exc:
            raise Reject(str(exc)) from exc
        if not isinstance(event, HandSettled):
            raise Reject(f"{envelope.type} on {delivery.subject}: expected {HandSettled.TYPE}")
        _, hand_id = stream_parts(envelope.stream_id)
        players = await self._players(envelope.stream_id)
        applied = await asyncio.to_thread(
            self.projection.apply_settled,
            envelope.event_id, hand_id, players, event, envelope.payload,
        )  # fmt: skip
        if applied:
            self.applied += 1
        log.info("hand_settled", hand_id=hand_id, applied=applied, deltas=list(event.ledger.deltas))

    async def _players(self, stream_id: str) -> tuple[str, ...]:
        data: bytes | None = None
        try:
            msg = await self.bus.js.get_last_msg(
                self.bus.stream, subject_for(stream_id, HandStarted.TYPE)
            )
            data = msg.data
        except nats.js.errors.NotFoundError:
            stored = await asyncio.to_thread(self.store.read_stream, stream_id, 0)
            data = stored[0].envelope if stored else None
        if not data:
            raise LookupError(f"{stream_id}: HandStarted not found yet")
        _, started = decode_envelope(data)
        if not isinstance(started, HandStarted):
            raise Reject(f"{stream_id}: the first event is {started.TYPE}, not hand_started")
        return tuple(seat.player_id for seat in started.seats)
