"""A hand older than the bus keeps (``DDZ_STREAM_MAX_AGE``) is read from the store.

On a nats-server of its own, a stream whose events live one second: once a hand's
events have aged out of JetStream, ``hand_stream.read`` (and the hand feed's ``load``)
take them from the recorder's store when given it (``StoreArchive``), and otherwise
refuse clearly (``HandAgedOut``, NOT_FOUND) rather than answer half a hand.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from ddz.adapters.codec import decode_envelope
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_feed import HandFeed
from ddz.adapters.messaging.hand_stream import HandAgedOut, HandCursor, StoreArchive
from ddz.adapters.runtime.nats_server import start_nats_server
from ddz.adapters.store import SqlEventStore, create_store
from ddz.application.errors import Kind, Reason
from ddz.domain.hand import (
    Disconnect,
    HandState,
    SeatInfo,
    StartHand,
    decide,
    hand_events,
    replay,
)
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from signing_kit import DEALER, KEYRING, RULES
from suite_kit import eventually

MAX_AGE = 1.0  # seconds an event stays on the test's stream


@pytest.fixture
async def aging_bus(tmp_path: Path) -> AsyncIterator[EventBus]:
    server = start_nats_server(tmp_path / "nats", port=0)
    bus = await EventBus.connect(server.url, name="retention-test")
    try:
        await bus.ensure_stream(max_age=MAX_AGE)
        yield bus
    finally:
        await bus.close()
        server.stop()


@pytest.fixture
def store(tmp_path: Path) -> SqlEventStore:
    return create_store(f"sqlite:///{tmp_path / 'events.sqlite3'}", upgrade=True)


async def deal(bus: EventBus, hand_id: str) -> tuple[HandCursor, list[bytes]]:
    people = (SeatInfo("ann"), SeatInfo("bea"), SeatInfo("cai"))
    events = decide(HandState(), StartHand(hand_id, CLASSIC, RoomSettings(), people, bytes(32)))
    assert isinstance(events, list)
    cursor, published = await hand_stream.publish(
        bus,
        hand_id,
        HandCursor(),
        events,
        causation_id="t",
        correlation_id="t",
        producer="t",
        signer=DEALER,
    )
    return cursor, [p.envelope for p in published]


async def aged_out(bus: EventBus) -> bool:
    return (await bus.js.stream_info(bus.stream)).state.messages == 0


async def test_a_hand_past_the_retention_is_read_from_the_store(
    aging_bus: EventBus, store: SqlEventStore
) -> None:
    bus = aging_bus
    cursor, envelopes = await deal(bus, "old")
    store.append("hand-old", 0, envelopes)  # as the recorder stores them
    fresh, _ = await hand_stream.read(bus, "old", keyring=KEYRING)
    assert await eventually(lambda: aged_out(bus), timeout=20.0, every=0.2)

    # Nothing of it on the bus: without the store it is no hand at all, with it whole.
    assert await hand_stream.read(bus, "old", keyring=KEYRING) == ([], HandCursor())
    archived, _ = await hand_stream.read(bus, "old", StoreArchive(store), keyring=KEYRING)
    assert [e.data for e in archived] == [e.data for e in fresh]

    # One more event after the first aged out: the bus has the hand's tail only.
    state = replay(hand_events([e.event for e in archived]))
    more = decide(state, Disconnect(0))
    assert isinstance(more, list)
    bus_cursor = HandCursor(version=cursor.version)  # what is left of its sequences: none
    _, published = await hand_stream.publish(
        bus,
        "old",
        bus_cursor,
        more,
        causation_id="t",
        correlation_id="t",
        producer="t",
        signer=DEALER,
    )
    with pytest.raises(HandAgedOut) as refused:
        await hand_stream.read(bus, "old", keyring=KEYRING)
    assert refused.value.kind is Kind.NOT_FOUND and refused.value.reason is Reason.UNKNOWN_HAND
    assert "older than the bus keeps" in refused.value.message

    whole, whole_cursor = await hand_stream.read(bus, "old", StoreArchive(store), keyring=KEYRING)
    assert [e.envelope.stream_version for e in whole] == list(range(1, len(envelopes) + 2))
    assert whole[-1].data == published[0].envelope and whole[-1].seq == published[0].seq
    assert whole_cursor.version == len(envelopes) + 1
    assert whole_cursor.public_seq == published[0].seq

    # The hand feed: its load refuses without the store and reads with it.
    with pytest.raises(HandAgedOut):
        await HandFeed(bus, keyring=KEYRING).load("old")
    fold = await HandFeed(bus, keyring=KEYRING, archive=StoreArchive(store)).load("old")
    assert fold is not None and fold.version == len(envelopes) + 1


async def test_a_feed_that_meets_a_tail_of_an_aged_out_hand_passes_it_by(
    aging_bus: EventBus,
) -> None:
    """A consumer that starts at the oldest message still kept may meet the middle of a
    hand whose head is gone: the feed lets it go (acked), it does not retry it forever."""
    bus = aging_bus
    cursor, envelopes = await deal(bus, "tail")
    assert await eventually(lambda: aged_out(bus), timeout=20.0, every=0.2)
    state = replay(hand_events([decode_envelope(e)[1] for e in envelopes]))
    more = decide(state, Disconnect(1))
    assert isinstance(more, list)
    await hand_stream.publish(
        bus, "tail", HandCursor(version=cursor.version), more,
        causation_id="t", correlation_id="t", producer="t", signer=RULES,
    )  # fmt: skip
    feed = HandFeed(bus, keyring=KEYRING)
    try:
        await feed.follow("tail-reader")
        assert await eventually(lambda: _idle(bus, "tail-reader"), timeout=20.0)
        assert feed.get("tail") is None
        info = await bus.js.consumer_info(bus.stream, "tail-reader")
        assert info.num_redelivered == 0  # passed by at once, not failed and retried
    finally:
        await feed.close()


async def _idle(bus: EventBus, durable: str) -> bool:
    info = await bus.js.consumer_info(bus.stream, durable)
    return not info.num_pending and not info.num_ack_pending
