"""The dealer trusts no caller with money: a hand's rule set, room settings, seats,
first bidder and balances are the table's, as the table service recorded them on the
table's stream (a room's table: from the rooms configuration), never the request's.

The measured attack: a Deal naming a room multiplier of 1,000,000, played through
``Decide`` for all three seats, moved 6,000,000 from a victim's balance and audited
clean. Here the same request (the fields of the old contract, as bytes) is refused and
records nothing; the well-formed requests an intruder can still send name a table and
a hand, and are refused unless that hand is the one the table assigned last -- which
is then dealt, played and settled at the table's stakes, and audits clean.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import grpc
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.table_stream import JetStreamTableLog
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.adapters.security.event_signing import event_keyring
from ddz.adapters.store import make_engine
from ddz.domain.hand import HandState, Phase, SeatInfo, hand_events, replay, view_for
from ddz.domain.hand.events import HandStarted
from ddz.domain.players import RandomPlayer
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.domain.shuffle import commitment
from ddz.v1 import dealer_pb2, hand_events_pb2, rules_pb2, settlement_pb2, table_pb2_grpc
from deal_kit import assign, open_table
from suite_kit import Suite
from table_kit import ENDED, HAND_TIMEOUT, Watcher, act, ddz_audit, hint, join, settled_ledger
from table_kit import stored as stored_up_to

from services.dealer.adapters.seeds import SeedVault
from services.table.use_cases.rooms import Room, load_rooms

RIGGED = 1_000_000
BALANCE = 10_000  # each seat's balance at the hand's start, as the table recorded it


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        if not number:
            return bytes(out + bytes([low]))
        out.append(low | 0x80)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def rigged(hand_id: str, table_id: str, victim: str) -> bytes:
    """A Deal request as the old contract let any caller write it (fields 3-8): a
    laizi hand at a multiplier of 1,000,000, the victim seated against two accomplices,
    seat 0 to bid first, balances of the caller's choosing."""
    room = codec.room_to_pb(RoomSettings(initial_multiplier=RIGGED, coefficient=100))
    seats = [codec.seat_to_pb(SeatInfo(p)) for p in (victim, "mallory", "trent")]
    balances = hand_events_pb2.Balances(values=[10**9, 10**9, 10**9])
    return b"".join((
        dealer_pb2.DealRequest(hand_id=hand_id, table_id=table_id).SerializeToString(),
        _field(3, b"laizi"),
        _field(4, codec.ruleset_to_pb(ruleset_for("laizi")).SerializeToString()),
        _field(5, room.SerializeToString()),
        *(_field(6, seat.SerializeToString()) for seat in seats),
        _varint(7 << 3) + _varint(0),
        _field(8, balances.SerializeToString()),
    ))  # fmt: skip


async def refused(call: object) -> tuple[grpc.StatusCode, str | None, str]:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as exc:
        return exc.code(), error_reason(exc), exc.details() or ""
    raise AssertionError("the call succeeded")


async def events_on_bus(suite: Suite, hand_id: str) -> list[hand_stream.ReadEvent]:
    """The hand's events from JetStream, each verified as its producer's."""
    read, _ = await hand_stream.read(suite.bus, hand_id, keyring=event_keyring(suite.settings.keys))
    return read


async def nothing_recorded(suite: Suite, hand_id: str) -> None:
    """No event of the hand on the bus and no seed kept for it."""
    on_bus = await events_on_bus(suite, hand_id)
    assert on_bus == []
    code, reason, _ = await refused(
        suite.dealer.GetSeed(dealer_pb2.GetSeedRequest(hand_id=hand_id))
    )
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND")


def laizi_room(suite: Suite) -> Room:
    """The laizi room of the suite's rooms configuration (the file the table reads)."""
    room = load_rooms(suite.settings.table.rooms_file).get("laizi")
    assert room is not None
    return room


async def hand_started(suite: Suite, hand_id: str) -> HandStarted:
    on_bus = await events_on_bus(suite, hand_id)
    started = on_bus[0].event
    assert isinstance(started, HandStarted)
    return started


async def balances_of(suite: Suite, players: tuple[str, ...]) -> list[int]:
    ask = suite.settlement.GetBalance
    return [(await ask(settlement_pb2.GetBalanceRequest(player_id=p))).balance for p in players]


async def play_every_seat(suite: Suite, hand_id: str, rng: random.Random) -> None:
    """Every seat played through ``RulesService.Decide``, as the intruder did."""
    player = RandomPlayer(rng)
    for _ in range(3000):
        on_bus = await events_on_bus(suite, hand_id)
        state: HandState = replay(hand_events(r.event for r in on_bus))
        if state.phase is Phase.ENDED:
            return
        command = player.act(view_for(state, state.turn))
        request = rules_pb2.DecideRequest(hand_id=hand_id, seat=state.turn)
        codec.set_command(request, command)
        answer = await suite.rules.Decide(request)
        assert answer.accepted, (command, answer.reason, answer.message)
    raise AssertionError(f"hand {hand_id} did not end")


async def test_a_deal_at_the_callers_stakes_is_refused_and_the_tables_stakes_are_dealt(
    suite: Suite,
) -> None:
    room = laizi_room(suite)
    victim = f"victim-{uuid.uuid4().hex[:8]}"
    players = (victim, "mallory", "trent")
    hand_id = f"trust-{uuid.uuid4().hex[:12]}"
    # A table of the laizi room as the table service records one: the room's rules and
    # settings from the rooms configuration, the hand assigned before it is dealt.
    table_id, cursor = await open_table(
        suite.bus, suite.settings, rules=room.rules, room=room.settings, seats=players,
        room_id=room.room_id, balances=(BALANCE,) * 3,
    )  # fmt: skip
    await assign(
        suite.bus,
        suite.settings,
        table_id,
        cursor,
        hand_id,
        first_bidder=1,
        balances=(BALANCE,) * 3,
    )
    before = await balances_of(suite, players)

    # The measured attack's request: refused, whatever else it names, and nothing dealt;
    # sent with the table's certificate (the only caller mutual TLS lets call Deal), so
    # the dealer's own check is what refuses it.
    deal = suite.channel("dealer", "table").unary_unary(
        "/ddz.v1.DealerService/Deal",
        request_serializer=lambda raw: raw,
        response_deserializer=dealer_pb2.DealResponse.FromString,
    )
    code, reason, details = await refused(deal(rigged(hand_id, table_id, victim)))
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    for name in ("variant", "rules", "room", "seats", "first_bidder", "balances"):
        assert name in details, details
    await nothing_recorded(suite, hand_id)

    # What a well-formed request can name: a table and a hand, nothing else.
    stranger = f"trust-{uuid.uuid4().hex[:12]}"
    at_victims_table = dealer_pb2.DealRequest(hand_id=stranger, table_id=table_id)
    assert (await refused(suite.dealer.Deal(at_victims_table)))[:2] == (
        grpc.StatusCode.FAILED_PRECONDITION, "UNKNOWN_HAND"
    )  # fmt: skip
    nowhere = dealer_pb2.DealRequest(hand_id=stranger, table_id=f"t-{uuid.uuid4().hex[:16]}")
    code, reason, details = await refused(suite.dealer.Deal(nowhere))
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "UNKNOWN_TABLE")
    assert nowhere.table_id in details
    await nothing_recorded(suite, stranger)

    # The assigned hand, asked for by whoever may call Deal: dealt at the table's stakes only.
    dealt = await suite.dealer.Deal(dealer_pb2.DealRequest(hand_id=hand_id, table_id=table_id))
    started = await hand_started(suite, hand_id)
    assert (started.rules, started.room) == (room.rules, room.settings)
    assert started.room.initial_multiplier == 2 != RIGGED
    assert started.seats == tuple(SeatInfo(p) for p in players)
    assert (started.first_bidder, started.balances) == (1, (BALANCE,) * 3)
    assert dealt.commitment == started.commitment

    await asyncio.wait_for(play_every_seat(suite, hand_id, random.Random(15)), HAND_TIMEOUT)
    ledger = await settled_ledger(suite, hand_id)
    deltas = list(ledger.ledger.deltas)
    after = await balances_of(suite, players)
    assert [a - b for a, b in zip(after, before, strict=True)] == deltas
    assert all(-BALANCE <= delta <= BALANCE for delta in deltas), deltas  # §10.3: within
    await stored_up_to(suite, hand_id, len(await events_on_bus(suite, hand_id)))
    audit = ddz_audit(suite, hand_id)
    assert audit.returncode == 0, audit.stdout + audit.stderr


async def test_a_room_hand_is_dealt_as_the_rooms_configuration_says_and_plays_to_the_end(
    suite: Suite,
) -> None:
    """The normal path: the table service seats a player in the laizi room and deals;
    the hand carries the room's rules and settings, the table's seats and balances; the
    table's hand cannot be dealt again, nor another hand at its table; it plays out,
    settles and audits clean."""
    room = laizi_room(suite)
    player = f"ann-{uuid.uuid4().hex[:8]}"
    seated = await join(suite.player(player), room.room_id)
    table, hand_id = seated.table, seated.hand_id
    started = await hand_started(suite, hand_id)
    assert (started.rules, started.room) == (room.rules, room.settings)
    history = await JetStreamTableLog(suite.bus, keyring=event_keyring(suite.settings.keys)).read(
        table.table_id
    )
    assert history is not None
    state = history.state
    assert started.seats == state.seats and state.hand_ids == (hand_id,)
    assert started.balances == state.balances and started.balances is not None

    again = dealer_pb2.DealRequest(hand_id=hand_id, table_id=table.table_id)
    assert (await refused(suite.dealer.Deal(again)))[:2] == (
        grpc.StatusCode.ALREADY_EXISTS, "VERSION_CONFLICT"
    )  # fmt: skip
    other = dealer_pb2.DealRequest(hand_id=f"x-{uuid.uuid4().hex[:12]}", table_id=table.table_id)
    assert (await refused(suite.dealer.Deal(other)))[:2] == (
        grpc.StatusCode.FAILED_PRECONDITION, "UNKNOWN_HAND"
    )  # fmt: skip

    stub = suite.table_as(seated.token)
    last = await asyncio.wait_for(play_out(stub, hand_id, seated.seat), HAND_TIMEOUT)
    assert last.phase == ENDED
    ledger = await settled_ledger(suite, hand_id)
    assert len(ledger.ledger.deltas) == 3
    on_bus = await events_on_bus(suite, hand_id)
    await stored_up_to(suite, hand_id, len(on_bus))
    audit = ddz_audit(suite, hand_id)
    assert audit.returncode == 0, audit.stdout + audit.stderr


async def play_out(stub: table_pb2_grpc.TableServiceStub, hand_id: str, seat: int) -> Any:
    """Play ``seat`` with the hints until the hand ends (the bots play the others)."""
    watcher = Watcher(stub, hand_id, seat).start()
    seen = 0
    while True:
        await watcher.until(lambda u, seen=seen: u.position > seen)
        latest = watcher.updates[-1]
        seen = latest.position
        if latest.view.phase == ENDED:
            return latest.view
        if latest.view.my_turn:
            try:
                await act(stub, hand_id, seat, await hint(stub, hand_id, seat))
            except grpc.aio.AioRpcError as exc:
                assert error_reason(exc) in ("NOT_YOUR_TURN", "WRONG_PHASE"), exc.details()


async def test_a_retried_deal_answers_as_the_first_and_another_request_is_refused(
    suite: Suite,
) -> None:
    """The table's Deal is retried when its answer is lost (the dealer or NATS died after
    the hand was published): the same request answers the same deal, publishing nothing
    more; a request of anyone else for the dealt hand is still refused."""
    hand_id = uuid.uuid4().hex
    table_id, cursor = await open_table(suite.bus, suite.settings, "classic")
    await assign(suite.bus, suite.settings, table_id, cursor, hand_id)
    request = dealer_pb2.DealRequest(hand_id=hand_id, table_id=table_id, request_id="deal-1")
    first = await suite.dealer.Deal(request)
    again = await suite.dealer.Deal(request)
    assert (again.commitment, again.version) == (first.commitment, first.version)
    assert [e.event_id for e in again.events] == [e.event_id for e in first.events]
    assert len(await events_on_bus(suite, hand_id)) == first.version  # nothing published twice
    other = dealer_pb2.DealRequest(hand_id=hand_id, table_id=table_id, request_id="deal-2")
    assert (await refused(suite.dealer.Deal(other)))[0] is grpc.StatusCode.ALREADY_EXISTS


async def test_a_dealer_that_died_after_keeping_the_seed_deals_it_on_the_retry(
    suite: Suite,
) -> None:
    """The seed is kept before anything is published: a dealer killed in between leaves a
    seed and no hand. The retry deals that seed (never a second one: the seed of a hand
    is fixed once kept), so the hand is not lost."""
    hand_id = uuid.uuid4().hex
    table_id, cursor = await open_table(suite.bus, suite.settings, "classic")
    await assign(suite.bus, suite.settings, table_id, cursor, hand_id)
    kept = bytes(range(32))
    engine = make_engine(suite.settings.store.database_url)
    try:
        await asyncio.to_thread(SeedVault(engine).put, hand_id, kept)  # as the dead one did
    finally:
        engine.dispose()
    request = dealer_pb2.DealRequest(hand_id=hand_id, table_id=table_id, request_id="deal-1")
    dealt = await suite.dealer.Deal(request)
    assert dealt.commitment == commitment(kept)
    assert (await hand_started(suite, hand_id)).commitment == commitment(kept)
