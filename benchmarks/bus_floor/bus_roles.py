"""The publisher and the consumers of the bus run, through the project's ``EventBus`` or
bare nats-py (``--raw``), and the publishing loop every publisher shares."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import nats
import nats.errors
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import Delivery
from ddz.adapters.messaging.subjects import (
    category_filter,
    stream_filter,
    stream_id_for,
    subject_for,
)
from nats.js.api import ConsumerConfig, DeliverPolicy

from bus_floor.protocol import next_line, say, until_eof

STREAM = "DDZ"  # ddz.adapters.messaging.subjects.STREAM_NAME
HAND_FILTER = category_filter("hand")
EVENT_TYPES = ("HandStarted", "BidPlaced", "CardsPlayed", "Passed", "HandSettled")
PAYLOAD = bytes(range(200))  # an envelope's size; its content does not matter to NATS
PUBLISH_TIMEOUT = 5.0  # as hand_stream.publish


# -- bus: the project's adapter --------------------------------------------------------


async def adapter_publisher(url: str, hand_ids: list[str], events: int, concurrency: int) -> None:
    bus = await EventBus.connect(url, name="floor-publisher")

    async def publish_hand(hand_id: str) -> None:
        stream_id = stream_id_for("hand", hand_id)
        hand_filter = stream_filter(stream_id)
        last = 0
        for n in range(events):
            subject = subject_for(stream_id, EVENT_TYPES[n % len(EVENT_TYPES)])
            published = await bus.publish(
                subject,
                PAYLOAD,
                str(uuid.uuid4()),
                last,
                expected_subject=hand_filter,
                timeout=PUBLISH_TIMEOUT,
            )
            last = published.seq

    await run_publisher(hand_ids, concurrency, publish_hand)
    await bus.close()


async def adapter_consumer(url: str, durable: str, expected: int, batch: int) -> None:
    bus = await EventBus.connect(url, name=durable)
    handled = 0
    finished = asyncio.Event()

    async def handler(delivery: Delivery) -> None:  # the ack is the adapter's
        nonlocal handled
        handled += 1
        if handled == expected:
            finished.set()

    await bus.subscribe_durable(durable, HAND_FILTER, handler, batch=batch)
    say("ready")
    await finished.wait()
    await asyncio.sleep(0)  # let the fetch loop send the last ack
    await bus.nc.flush()  # every ack is on the server
    say("done", handled)
    await until_eof()
    await bus.close()


# -- bus: bare nats-py -----------------------------------------------------------------


async def raw_publisher(url: str, hand_ids: list[str], events: int, concurrency: int) -> None:
    nc = await nats.connect(url, name="floor-publisher")
    js = nc.jetstream()

    async def publish_hand(hand_id: str) -> None:
        hand_filter = stream_filter(f"hand-{hand_id}")
        last = 0
        for n in range(events):
            headers = {
                "Nats-Msg-Id": str(uuid.uuid4()),
                "Nats-Expected-Last-Subject-Sequence": str(last),
                "Nats-Expected-Last-Subject-Sequence-Subject": hand_filter,
            }
            subject = subject_for(f"hand-{hand_id}", EVENT_TYPES[n % len(EVENT_TYPES)])
            ack = await js.publish(
                subject, PAYLOAD, timeout=PUBLISH_TIMEOUT, stream=STREAM, headers=headers
            )
            last = ack.seq

    await run_publisher(hand_ids, concurrency, publish_hand)
    await nc.close()


async def raw_consumer(url: str, durable: str, expected: int, batch: int) -> None:
    nc = await nats.connect(url, name=durable)
    js = nc.jetstream()
    # The consumer configuration EventBus.subscribe_durable uses by default.
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.ALL, max_deliver=5, ack_wait=30.0, max_ack_pending=1000
    )
    pull = await js.pull_subscribe(HAND_FILTER, durable=durable, stream=STREAM, config=config)
    say("ready")
    handled = 0
    while handled < expected:
        try:
            messages = await pull.fetch(batch, timeout=5.0)
        except nats.errors.TimeoutError:
            continue
        for msg in messages:
            await msg.ack()
            handled += 1
    await nc.flush()
    say("done", handled)
    await until_eof()
    await nc.close()


# -- bus: shared by all ----------------------------------------------------------------


async def run_publisher(
    hand_ids: list[str], concurrency: int, publish_hand: Callable[[str], Awaitable[None]]
) -> None:
    """``ready``, wait for ``go``, publish every hand with ``concurrency`` tables, ``done``."""
    say("ready")
    if (await next_line()).strip() != "go":
        return
    pending = list(reversed(hand_ids))

    async def table() -> None:
        while pending:
            await publish_hand(pending.pop())

    await asyncio.gather(*(table() for _ in range(concurrency)))
    say("done", len(hand_ids))
    await until_eof()
