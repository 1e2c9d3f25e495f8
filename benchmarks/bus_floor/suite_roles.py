"""The bus run with the services' consumer mix (``--suite-mix``): a publisher of typical
hands as the rules service publishes them, and the table's, the bot's, settlement's and
the recorder's consumers as the services configure them, each handler counting."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import Delivery
from ddz.adapters.messaging.subjects import stream_filter, subject_for

from bus_floor.bus_roles import PUBLISH_TIMEOUT, run_publisher
from bus_floor.protocol import say, until_eof

# Envelope bytes of each event type: the mean of ``codec.envelope_and_bytes`` over 50
# classic hands of greedy self-play (263 B a hand's event on average).
SUITE_EVENT_SIZES = {
    "hand_started": 542,
    "cards_dealt": 637,
    "bid_made": 244,
    "redealt": 307,
    "landlord_chosen": 284,
    "play_made": 262,
    "passed": 238,
    "hand_ended": 368,
    "hand_settled": 340,
    "seed_revealed": 316,
}
SUITE_MIN_EVENTS = 10  # the fixed head (6 events) and tail (4) of a hand
SUITE_MEAN_SIZE = 263
SUITE_FEEDS = ("table", "bot")  # services.table.app.NAME, services.bot.app.NAME


def suite_hand() -> Callable[[int], list[tuple[str, bool]]]:
    """``events -> [(type, hidden)...]``: the shape of a typical hand of ``events`` events."""
    from ddz.domain.hand import events as e

    head = [e.HandStarted, e.CardsDealt, e.BidMade, e.BidMade, e.BidMade, e.LandlordChosen]
    tail = [e.PlayMade, e.HandEnded, e.HandSettled, e.SeedRevealed]
    middle = (e.PlayMade, e.Passed)

    def shape(events: int) -> list[tuple[str, bool]]:
        kinds = [*head, *(middle[n % 2] for n in range(events - len(head) - len(tail))), *tail]
        return [(kind.TYPE, bool(kind.HIDDEN)) for kind in kinds]

    return shape


async def suite_publisher(url: str, hand_ids: list[str], events: int, concurrency: int) -> None:
    from ddz.adapters.codec import new_event_id
    from ddz.adapters.messaging import hand_stream

    from services.settlement.adapters.consumer import FILTER as SETTLED_FILTER

    shape = suite_hand()(events)
    payloads = {kind: bytes(size) for kind, size in SUITE_EVENT_SIZES.items()}
    bus = await EventBus.connect(url, name="floor-publisher")

    async def publish_hand(hand_id: str) -> None:
        stream_id = hand_stream.hand_stream_id(hand_id)
        cursor = hand_stream.HandCursor()
        for kind, hidden in shape:
            subject = subject_for(stream_id, kind, internal=hidden)
            seq = await hand_stream._publish_checked(
                bus,
                subject,
                payloads[kind],
                new_event_id(),
                cursor.internal_seq if hidden else cursor.public_seq,
                stream_filter(stream_id, internal=hidden),
                PUBLISH_TIMEOUT,
            )
            cursor = cursor.after(hidden, seq)

    settled = [kind for kind, _ in shape if SETTLED_FILTER.endswith("." + kind)]
    assert len(settled) == 1, "settlement must see exactly one event a hand"
    await run_publisher(hand_ids, concurrency, publish_hand)
    await bus.close()


async def suite_feed(url: str, durable: str, expected: int) -> None:
    """The table's or the bot's consumer: ``HandFeed.follow``, its handler counting."""
    from ddz.adapters.messaging.hand_feed import HandFeed
    from ddz.adapters.security.event_signing import EventKeyring

    finished = asyncio.Event()

    class CountingFeed(HandFeed):
        handled = 0

        async def handle_data(self, data: bytes) -> None:
            self.handled += 1
            if self.handled == expected:
                finished.set()

    bus = await EventBus.connect(url, name=durable)
    # No keys: the counting handler folds nothing, so it verifies no signature.
    feed = CountingFeed(bus, keyring=EventKeyring(), keep_ended=0)
    await feed.follow(durable)
    say("ready")
    await finished.wait()
    await asyncio.sleep(0)  # the fetch loop acks the last message as its handler returns
    await bus.nc.flush()
    say("done", feed.handled)
    await until_eof()
    await feed.close()
    await bus.close()


async def suite_settlement(url: str, expected: int) -> None:
    """Settlement's consumer: ``SettlementConsumer.start``, its handler counting."""
    from services.settlement.adapters.consumer import SettlementConsumer

    finished = asyncio.Event()

    class CountingSettlement(SettlementConsumer):
        handled = 0

        async def handle(self, delivery: Delivery) -> None:  # acked by the fetch loop
            self.handled += 1
            if self.handled == expected:
                finished.set()

    bus = await EventBus.connect(url, name="settlement")
    consumer = CountingSettlement(bus, None)  # type: ignore[arg-type]  # no database
    await consumer.start()
    say("ready")
    await finished.wait()
    await asyncio.sleep(0)  # let the fetch loop send the last ack
    await bus.nc.flush()
    say("done", consumer.handled)
    await until_eof()
    await bus.close()


async def suite_recorder(url: str, expected: int) -> None:
    """The recorder's consumer: ``StoreConsumer`` and its pull loop, storing nothing."""
    from nats.aio.msg import Msg

    from services.recorder.adapters.consumer import StoreConsumer

    finished = asyncio.Event()

    class CountingRecorder(StoreConsumer):
        handled = 0

        async def _handle(self, messages: list[Msg]) -> None:
            for msg in messages:  # the real one acks each message after its store write
                await msg.ack()
            self.handled += len(messages)
            if self.handled >= expected:
                finished.set()

    bus = await EventBus.connect(url, name="recorder")
    recorder = CountingRecorder(bus, None)  # type: ignore[arg-type]  # no store
    await recorder.start()
    say("ready")
    await finished.wait()
    await bus.nc.flush()
    say("done", recorder.handled)
    await until_eof()
    await recorder.stop()
    await bus.close()
