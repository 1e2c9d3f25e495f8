"""A decision's events go onto the bus whole: the expected subject sequence holds over a
wildcard, a retry after a lost acknowledgement stores them once, a deal and its retry
racing are one hand, and without atomic decisions the events go one by one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.server import (
    WrongLastSequence,
)
from ddz.adapters.messaging.subjects import stream_filter, subject_for
from ddz.application.errors import Kind, Refusal
from ddz.bot.kinds import make_player
from ddz.domain import selfplay
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from signing_kit import DEALER, KEYRING


async def test_expected_subject_sequence_over_a_wildcard(bus: EventBus) -> None:
    """What the single-writer rule rests on (nats-server 2.15): the check holds over
    ``ddz.v1.hand.<id>.*`` whatever the event's own subject."""
    stream_id = "hand-wild"
    public = stream_filter(stream_id)
    first = await bus.publish(subject_for(stream_id, "a"), b"1", "w1", 0, expected_subject=public)
    await bus.publish(subject_for(stream_id, "b", internal=True), b"2", "w2")  # other side
    with pytest.raises(WrongLastSequence):
        await bus.publish(subject_for(stream_id, "c"), b"3", "w3", 0, expected_subject=public)
    ok = await bus.publish(
        subject_for(stream_id, "c"), b"3", "w3", first.seq, expected_subject=public
    )
    assert ok.seq == first.seq + 2


def deal_events(hand_id: str) -> list[Any]:
    """A decision of two events, one on each side: a hand's deal (``hand_started``, the
    hidden ``cards_dealt``)."""
    players = [make_player("greedy", seed) for seed in range(3)]
    events, _ = selfplay.play_hand(CLASSIC, RoomSettings(), players, bytes(32), hand_id=hand_id)
    deal = events[:2]
    assert [type(e).__name__ for e in deal] == ["HandStarted", "CardsDealt"]
    return deal


class LosesFirstBatchAck(EventBus):
    """A bus whose first atomic batch is stored but whose acknowledgement is lost."""

    lost = False

    async def publish_batch(self, messages: Any, *, timeout: float = 5.0) -> list[int]:
        seqs = await super().publish_batch(messages, timeout=timeout)
        if not self.lost:
            self.lost = True
            raise TimeoutError("acknowledgement lost")
        return seqs


async def test_a_decision_goes_out_whole_and_a_retry_after_a_lost_ack_stores_it_once(
    bus: EventBus,
) -> None:
    """Several events of one decision are one atomic batch (nats-server >= 2.12): the
    deal here, a public ``hand_started`` and the hidden ``cards_dealt``. Its retry after a
    lost acknowledgement is refused by the server and recognised as our own batch."""
    deal = deal_events("atomic")
    lossy = LosesFirstBatchAck(bus.nc, bus.stream)
    assert await lossy.atomic_batches()
    cursor, published = await hand_stream.publish(
        lossy, "atomic", hand_stream.HandCursor(), deal,
        causation_id="c", correlation_id="c", producer="pytest", signer=DEALER,
    )  # fmt: skip
    assert lossy.lost
    on_bus, read_cursor = await hand_stream.read(bus, "atomic", keyring=KEYRING)
    assert read_cursor == cursor and cursor.version == 2
    assert [e.data for e in on_bus] == [p.envelope for p in published]
    assert [e.seq for e in on_bus] == [p.seq for p in published]
    assert (await bus.js.stream_info(bus.stream)).state.messages == 2


class HoldsFirstBatch(EventBus):
    """A bus whose first atomic batch goes out only once ``release`` is set: a deal
    stuck on its way (its NATS node dying) while a retry of it gets through."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def publish_batch(self, messages: Any, *, timeout: float = 5.0) -> list[int]:
        if not self.held.is_set():
            self.held.set()
            await self.release.wait()
        return await super().publish_batch(messages, timeout=timeout)


async def test_a_deal_and_its_retry_racing_are_one_hand_and_both_answer_it(
    bus: EventBus,
) -> None:
    """The first attempt of a deal is held on its way out while the same request, asked
    again (by the table instance that took over), publishes the hand. The first then
    loses the race on the stream's expected sequence, finds the very events it was
    sending, and answers the same deal as the retry did: one hand, nobody refused (a
    refused first attempt would make its dealer forget the seed of a hand in play)."""
    deal = deal_events("raced")
    slow = HoldsFirstBatch(bus.nc, bus.stream)
    assert await slow.atomic_batches()
    ids = {"causation_id": "deal-1", "correlation_id": "raced", "producer": "pytest"}
    first = asyncio.ensure_future(
        hand_stream.JetStreamHandLog(slow, DEALER, KEYRING).start("raced", deal, **ids)
    )
    await asyncio.wait_for(slow.held.wait(), 10)
    retry = await hand_stream.JetStreamHandLog(bus, DEALER, KEYRING).start("raced", deal, **ids)
    slow.release.set()
    assert await asyncio.wait_for(first, 10) == retry
    assert retry[0] == 2 and [e.type for e in retry[1]] == ["hand_started"]
    assert (await bus.js.stream_info(bus.stream)).state.messages == 2
    other = {**ids, "causation_id": "deal-2"}
    with pytest.raises(Refusal) as refused:
        await hand_stream.JetStreamHandLog(bus, DEALER, KEYRING).start("raced", deal, **other)
    assert refused.value.kind is Kind.CONFLICT


async def test_without_atomic_decisions_the_events_go_one_by_one(bus: EventBus) -> None:
    """DDZ_ATOMIC_DECISIONS=0: no batch, each event its own checked publish."""
    deal = deal_events("single")
    lossy = LosesFirstBatchAck(bus.nc, bus.stream)
    lossy.atomic_decisions = False
    cursor, published = await hand_stream.publish(
        lossy, "single", hand_stream.HandCursor(), deal,
        causation_id="c", correlation_id="c", producer="pytest", signer=DEALER,
    )  # fmt: skip
    assert not lossy.lost and cursor.version == 2
    on_bus, _ = await hand_stream.read(bus, "single", keyring=KEYRING)
    assert [e.data for e in on_bus] == [p.envelope for p in published]
