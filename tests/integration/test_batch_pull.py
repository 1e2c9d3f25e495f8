"""``BatchPull``, the recorder's reader of its durable consumer, against a real
nats-server: what is stored comes in one batch; on a quiet bus a waiting request hands
over its first message as it arrives, instead of holding it until the batch fills or the
request expires (the recorder would store a lone move seconds late); what that request
brings after it is kept for the next fetch, none lost or doubled."""

from __future__ import annotations

import asyncio
import time

from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.pulls import BatchPull
from ddz.adapters.messaging.subjects import subject_for
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

DURABLE = "batch-reader"
PATIENCE = 30.0  # the fetch's own timeout: a request held to it would show


async def reader(bus: EventBus) -> BatchPull:
    await bus.js.add_consumer(
        bus.stream,
        ConsumerConfig(
            durable_name=DURABLE,
            deliver_policy=DeliverPolicy.ALL,
            ack_policy=AckPolicy.EXPLICIT,
        ),
    )
    pull = BatchPull(bus, DURABLE)
    await pull.start()
    return pull


async def publish(bus: EventBus, *ids: str) -> None:
    for event_id in ids:
        await bus.publish(subject_for("hand-1", "CardsPlayed"), event_id.encode(), event_id)


async def test_what_is_stored_comes_in_one_batch(bus: EventBus) -> None:
    await publish(bus, "e1", "e2", "e3")
    pull = await reader(bus)
    try:
        got = await pull.fetch(100, PATIENCE)
        assert [m.data for m in got] == [b"e1", b"e2", b"e3"]
        for msg in got:
            await msg.ack()
    finally:
        await pull.stop()


async def test_a_lone_message_on_a_quiet_bus_is_handed_over_as_it_comes(bus: EventBus) -> None:
    pull = await reader(bus)
    try:
        waiting = asyncio.create_task(pull.fetch(100, PATIENCE))
        await asyncio.sleep(0.5)  # the no_wait request found nothing; the long one waits
        assert not waiting.done()
        started = time.monotonic()
        await publish(bus, "lone")
        got = await asyncio.wait_for(waiting, PATIENCE + 5)
        waited = time.monotonic() - started
        assert [m.data for m in got] == [b"lone"]
        # Held until the batch filled or the request expired, it would take PATIENCE.
        assert waited < PATIENCE / 2, f"the lone message came after {waited:.1f} s"
        for msg in got:
            await msg.ack()

        # The same request is still open on the server: what it brings next is kept
        # and handed over by the next fetch, each message once.
        await publish(bus, "next-1", "next-2")
        seen: list[bytes] = []
        while len(seen) < 2:
            batch = await pull.fetch(100, PATIENCE)
            seen += [m.data for m in batch]
            for msg in batch:
                await msg.ack()
        assert seen == [b"next-1", b"next-2"]
    finally:
        await pull.stop()
