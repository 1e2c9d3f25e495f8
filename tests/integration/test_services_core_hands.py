"""Whole hands played through the core services over a real nats-server and a real
database (``driver_kit``): every variant stored in order exactly once, concurrent hands,
duplicated publishes and a recorder restarted mid-hand.

Runs on SQLite always and on PostgreSQL when ``DDZ_TEST_DATABASE_URL`` is set (the
``database_url`` fixture of tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.subjects import subject_for
from ddz.adapters.security.event_signing import event_keyring
from ddz.adapters.store import create_store
from ddz.domain.hand import (
    Phase,
    hand_events,
    replay,
)
from ddz.domain.hand.events import HandSettled
from ddz.domain.ruleset import VARIANTS
from ddz.v1 import (
    recorder_pb2,
    settlement_pb2,
    settlement_pb2_grpc,
)
from driver_kit import PLAYERS, Driver, _if_length, play_hand, stored_stream
from suite_kit import Suite, consumers_idle, eventually


@pytest.mark.parametrize("variant", sorted(VARIANTS))
async def test_full_hand_of_every_variant_is_stored_in_order_exactly_once(
    core_suite: Suite, variant: str
) -> None:
    hand_id = f"{variant}-{uuid.uuid4().hex[:8]}"
    played = await play_hand(core_suite, variant, hand_id, seed=len(variant))
    # Everything the rules and the dealer published, in order, straight from the bus.
    on_bus, cursor = await hand_stream.read(
        core_suite.bus, hand_id, keyring=event_keyring(core_suite.settings.keys)
    )
    stored = await eventually(
        lambda: _if_length(stored_stream(core_suite, hand_id), cursor.version)
    )
    assert [s.envelope for s in stored] == [r.data for r in on_bus]
    assert [codec.parse_envelope(s.envelope).stream_version for s in stored] == list(
        range(1, cursor.version + 1)
    )
    # The public events each Decide answered with are the stored ones, byte for byte
    # in content (the response re-serialises; compare the parsed envelopes).
    answered = [e for r in played.responses for e in r.events]
    public = [codec.parse_envelope(s.envelope) for s in stored]
    public = [e for e in public if e.type not in codec.HIDDEN_TYPES]
    assert played.dealt is not None
    assert [e.event_id for e in [*played.dealt.events, *answered]] == [e.event_id for e in public]
    # The hand ended and settled; settlement applied the ledger to the players.
    final = replay(hand_events(r.event for r in on_bus))
    assert final.phase is Phase.ENDED and final.ledger is not None
    settlement = core_suite.settlement
    ledger = await eventually(lambda: _ledger(settlement, hand_id))
    assert list(ledger.hand.ledger.deltas) == list(final.ledger.deltas)
    assert list(ledger.hand.players) == list(PLAYERS)
    for seat, player in enumerate(PLAYERS):
        balance = await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id=player))
        assert (balance.balance, balance.hands) == (final.ledger.deltas[seat], 1)


async def test_concurrent_hands_are_each_stored_in_order(core_suite: Suite) -> None:
    """Hands of every variant at once: the recorder's batches mix streams, and each
    stream is still stored complete and in order; balances add up over the hands."""
    hand_ids = {variant: f"many-{variant}-{uuid.uuid4().hex[:6]}" for variant in VARIANTS}
    drivers = await asyncio.gather(
        *(play_hand(core_suite, variant, hand_id, seed=99) for variant, hand_id in hand_ids.items())
    )
    totals = dict.fromkeys(PLAYERS, 0)
    for driver in drivers:
        on_bus, _ = await hand_stream.read(
            core_suite.bus, driver.hand_id, keyring=event_keyring(core_suite.settings.keys)
        )
        stored = await stored_complete(core_suite, driver.hand_id)
        assert [s.envelope for s in stored] == [e.data for e in on_bus]
        assert driver.state.ledger is not None
        for seat, player in enumerate(PLAYERS):
            totals[player] += driver.state.ledger.deltas[seat]
    settlement = core_suite.settlement
    for driver in drivers:
        await eventually(lambda hand_id=driver.hand_id: _ledger(settlement, hand_id))
    for player, total in totals.items():
        balance = await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id=player))
        assert (balance.balance, balance.hands) == (total, len(VARIANTS))
    listed = await settlement.ListLedgers(settlement_pb2.ListLedgersRequest(player_id="bob"))
    assert sorted(ledger.hand.hand_id for ledger in listed.ledgers) == sorted(hand_ids.values())
    assert all(ledger.seat == 1 for ledger in listed.ledgers)


async def _ledger(
    stub: settlement_pb2_grpc.SettlementServiceStub, hand_id: str
) -> settlement_pb2.GetLedgerResponse | None:
    try:
        return await stub.GetLedger(settlement_pb2.GetLedgerRequest(hand_id=hand_id))
    except grpc.aio.AioRpcError as exc:
        if exc.code() is grpc.StatusCode.NOT_FOUND:
            return None
        raise


async def stored_complete(suite: Suite, hand_id: str) -> list[Any]:
    """The stored stream, once it holds everything the bus holds for the hand."""
    _, cursor = await hand_stream.read(
        suite.bus, hand_id, keyring=event_keyring(suite.settings.keys)
    )
    return await eventually(lambda: _if_length(stored_stream(suite, hand_id), cursor.version))


async def test_duplicated_publishes_change_nothing(core_suite: Suite) -> None:
    hand_id = "dup-" + uuid.uuid4().hex[:8]
    await play_hand(core_suite, "classic", hand_id, seed=7)
    stored = await stored_complete(core_suite, hand_id)
    settlement = core_suite.settlement
    await eventually(lambda: _ledger(settlement, hand_id))
    balances = [
        await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id=p)) for p in PLAYERS
    ]
    on_bus, _ = await hand_stream.read(
        core_suite.bus, hand_id, keyring=event_keyring(core_suite.settings.keys)
    )
    stream_id = f"hand-{hand_id}"
    # The same event id again: JetStream itself drops it (Nats-Msg-Id).
    for event in on_bus:
        subject = subject_for(stream_id, event.envelope.type, internal=event.hidden)
        ack = await core_suite.bus.publish(subject, event.data, event.envelope.event_id)
        assert ack.duplicate
    # The same event again under a new message id (as after the duplicate window): it
    # reaches the consumers, which must recognise the event id themselves.
    settled = next(e for e in on_bus if isinstance(e.event, HandSettled))
    for event in (on_bus[3], settled):
        subject = subject_for(stream_id, event.envelope.type, internal=event.hidden)
        ack = await core_suite.bus.publish(subject, event.data, uuid.uuid4().hex)
        assert not ack.duplicate
    await eventually(lambda: consumers_idle(core_suite.bus, "recorder"))
    await eventually(lambda: consumers_idle(core_suite.bus, "settlement"))
    assert [s.envelope for s in await stored_stream(core_suite, hand_id)] == [
        s.envelope for s in stored
    ]
    everything = await core_suite.recorder.ReadAll(recorder_pb2.ReadAllRequest())
    streams = [codec.parse_envelope(e.envelope).stream_id for e in everything.events]
    assert streams.count(stream_id) == len(stored)
    assert len(streams) == len(stored) + 2  # and the table's opening and hand_assigned
    again = [
        await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id=p)) for p in PLAYERS
    ]
    assert again == balances
    mine = await settlement.ListLedgers(settlement_pb2.ListLedgersRequest(player_id="alice"))
    assert [ledger.hand.hand_id for ledger in mine.ledgers] == [hand_id]


async def test_restarting_the_recorder_mid_hand_loses_nothing(
    core_suite: Suite, tmp_path: Path
) -> None:
    hand_id = "restart-" + uuid.uuid4().hex[:8]
    driver = Driver(core_suite, hand_id, random.Random(11))
    await driver.deal("laizi")
    await driver.play(steps=4)
    await eventually(lambda: consumers_idle(core_suite.bus, "recorder"))
    await core_suite.stop("recorder")
    await driver.play(steps=6)  # published while nobody records
    await core_suite.start("recorder")
    await driver.play()
    stored = await stored_complete(core_suite, hand_id)
    on_bus, _ = await hand_stream.read(
        core_suite.bus, hand_id, keyring=event_keyring(core_suite.settings.keys)
    )
    assert [s.envelope for s in stored] == [e.data for e in on_bus]
    store = create_store(core_suite.settings.store.database_url)
    try:
        hand = [e.envelope for e in store.read_all()
                if codec.parse_envelope(e.envelope).stream_id == f"hand-{hand_id}"]  # fmt: skip
        assert hand == [e.data for e in on_bus]  # (the store has its table's events too)
        # The finished hand's chain head is signed with the operator's key.
        (signature,) = store.read_signatures(f"hand-{hand_id}")
        assert signature.head_hash == stored[-1].hash
    finally:
        store.close()
