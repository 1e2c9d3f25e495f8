"""Settlement's durable consumer: each ``HandSettled`` delivered to ``ApplySettled``.

Acked after the write (``EventBus.subscribe_durable``); a refusal as INVALID can never
be applied and is terminated, anything else is retried later.
"""

from __future__ import annotations

import nats.js.errors
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import Delivery, Reject
from ddz.adapters.messaging.hand_stream import HAND
from ddz.adapters.messaging.subjects import category_filter, subject_for
from ddz.application.errors import Kind, Refusal
from ddz.domain.hand.events import HandSettled, HandStarted

from ..use_cases.handlers import ApplySettled

DURABLE = "settlement"
FILTER = category_filter(HAND, event_type=HandSettled.TYPE)
# Effectively never give up (EventBus terminates a message after max_deliver tries):
# a balance update must not be dropped because the database was down for a while.
MAX_DELIVER = 100_000


class BusStartedHands:
    """The ``StartedHands`` port: JetStream's last ``hand_started`` of the hand."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus

    async def last_started(self, stream_id: str) -> bytes | None:
        try:
            # A direct get of this one subject: the only read its NATS user may make
            # (``nats_auth``), so a leaked settlement key reads no cards.
            msg = await self.bus.js.get_last_msg(
                self.bus.stream, subject_for(stream_id, HandStarted.TYPE), direct=True
            )
        except nats.js.errors.NotFoundError:
            return None
        data: bytes | None = msg.data
        return data


class SettlementConsumer:
    def __init__(self, bus: EventBus, apply: ApplySettled) -> None:
        self.bus = bus
        self.apply = apply

    async def start(self, durable: str = DURABLE) -> None:
        await self.bus.subscribe_durable(
            durable, FILTER, self.handle, max_deliver=MAX_DELIVER, retry_delay=0.5
        )

    async def handle(self, delivery: Delivery) -> None:
        try:
            await self.apply(delivery.data, delivery.subject)
        except Refusal as refusal:
            if refusal.kind is Kind.INVALID:
                raise Reject(refusal.message) from refusal
            raise
