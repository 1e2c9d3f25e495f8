"""What a table service restart keeps of the rooms, with fake ports (no server, no
bus): ``seat_ready`` and ``hand_withdrawn`` in the table's fold, a ready round resumed
from the stream, a deal lost every time withdrawn on the stream, and the queues'
tickets kept in a ``RoomQueueLog`` and queued again with the time they first joined."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence

import pytest
from ddz.adapters.messaging.room_queue import decode_ticket, encode_ticket
from ddz.adapters.messaging.table_stream import decode, encode, envelope_for
from ddz.application.errors import Kind, Refusal
from ddz.application.hand_fold import HandFold
from ddz.application.room_tickets import QueuedTicket, ticket_key
from ddz.application.table_history import TableCursor, TableHistory
from ddz.domain.hand import Phase, SeatInfo
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import (
    HandAssigned,
    HandWithdrawn,
    PlayerLeft,
    SeatReady,
    TableClosed,
    TableEvent,
    TableHistoryError,
    TableOpened,
    replay,
)
from table_fakes import (
    FakeBot,
    FakeDealer,
    FakeHands,
    FakeRules,
    FakeSettlement,
    FakeTokens,
    in_play,
)

from services.table.use_cases import lobby as lobby_module
from services.table.use_cases.dealing import DEAL_ATTEMPTS, TableSpec
from services.table.use_cases.handlers import TableHandlers
from services.table.use_cases.lobby import Seat
from services.table.use_cases.rooms import Room, Rooms
from services.table.use_cases.tables import Table, Tables

CLASSIC = ruleset_for("classic")
SEATS = (SeatInfo("alice"), SeatInfo("bob"), SeatInfo("bot-t1-2", is_bot=True))
OPENED = TableOpened("t1", CLASSIC, RoomSettings(), SEATS, "slow")
WAIT = 50.0  # the room's bot fill wait: long enough that only a kept joined time fills it
ROOMS = Rooms((Room("slow", "Slow", CLASSIC, RoomSettings(), bot_fill_wait=WAIT),), 100)


# -- the fold ----------------------------------------------------------------------------


def test_seat_ready_keeps_who_is_ready_for_the_next_hand_and_since_when() -> None:
    state = replay([OPENED, HandAssigned("h1"), SeatReady(1, 1, 100.0), SeatReady(0, 1, 105.0),
                    SeatReady(1, 1, 107.0)])  # fmt: skip
    assert state.ready == (1, 0) and state.ready_for == 1 and state.ready_since == 100.0
    assert state.ready_for_next == (1, 0)


def test_the_next_hand_assigned_ends_the_round_and_a_new_round_starts_anew() -> None:
    state = replay([OPENED, HandAssigned("h1"), SeatReady(0, 1, 100.0), HandAssigned("h2")])
    assert state.ready == () and state.ready_for_next == ()
    state = replay([OPENED, SeatReady(0, 0, 100.0), HandAssigned("h1"), SeatReady(1, 1, 300.0)])
    assert (state.ready, state.ready_for, state.ready_since) == ((1,), 1, 300.0)


def test_a_withdrawn_hand_is_no_longer_the_tables() -> None:
    lost = HandWithdrawn("h2", "the dealer's answer was lost")
    state = replay([OPENED, HandAssigned("h1", None, (1, 2, 3)), HandAssigned("h2", 1, (4, 5, 6)),
                    lost, HandAssigned("h3", 1)])  # fmt: skip
    assert state.hand_ids == ("h1", "h3") and state.first_bidders == (None, 1)
    assert state.last_hand_id == "h3" and state.version == 5
    again = replay([OPENED, HandAssigned("h1"), HandWithdrawn("h9"), HandWithdrawn("h1")])
    assert again.hand_ids == () and again.first_bidders == ()


def test_an_old_stream_without_them_folds_as_before() -> None:
    old: list[TableEvent] = [OPENED, HandAssigned("h1", None, (9, 9, 9)), PlayerLeft(1, "bob")]
    state = replay(old)
    assert state.hand_ids == ("h1",) and state.balances == (9, 9, 9)
    assert state.left_seats == {1: "bob"} and state.version == 3
    assert state.ready == () and state.ready_for_next == () and state.ready_since == 0.0


def test_a_seat_ready_for_no_seat_is_no_table() -> None:
    with pytest.raises(TableHistoryError):
        replay([OPENED, SeatReady(3, 0, 1.0)])


@pytest.mark.parametrize("event", [SeatReady(2, 7, 1796000000.25), HandWithdrawn("h1", "lost")])
def test_the_new_events_survive_their_envelope(event: TableEvent) -> None:
    envelope = envelope_for("t1", 5, event, producer="test")
    assert envelope.type == event.TYPE and envelope.type_version == 1
    assert decode(envelope.type, envelope.type_version, envelope.payload) == event
    assert encode(event).SerializeToString() == envelope.payload


def test_a_kept_ticket_reads_back_as_it_was_written() -> None:
    ticket = QueuedTicket("slow", "ann", 1796000000.5, 2500)
    assert decode_ticket(encode_ticket(ticket)) == ticket
    assert ticket.key == ticket_key("slow", "ann") == "slow.ann"
    with pytest.raises(ValueError):
        decode_ticket(b'{"room": "slow", "player": "ann", "joined": "soon"}')


# -- the service, with fakes ---------------------------------------------------------------


class MemoryLog:
    """The ``TableLog`` port in memory: every table's events, as written."""

    def __init__(self) -> None:
        self.streams: dict[str, list[TableEvent]] = {}

    async def append(
        self, table_id: str, after: TableCursor, events: Sequence[TableEvent]
    ) -> TableCursor:
        stream = self.streams.setdefault(table_id, [])
        assert after.version == len(stream), "written out of order"
        stream.extend(events)
        return TableCursor(len(stream), len(stream))


class MemoryQueue:
    """The ``RoomQueueLog`` port in memory: the tickets kept, by key."""

    def __init__(self, *tickets: QueuedTicket) -> None:
        self.kept = {ticket.key: ticket for ticket in tickets}

    def keep(self, ticket: QueuedTicket, ttl: float) -> None:
        assert ttl >= 60
        self.kept[ticket.key] = ticket

    def drop(self, room_id: str, player_id: str) -> None:
        self.kept.pop(ticket_key(room_id, player_id), None)

    async def tickets(self) -> list[QueuedTicket]:
        return list(self.kept.values())

    async def settle(self) -> None:
        return None


class Service:
    """One run of the table service's handlers over a table log that outlives it."""

    def __init__(self, log: MemoryLog, hands: FakeHands, ready_wait: float = 30.0) -> None:
        self.log = log
        self.tables = Tables(log)
        self.dealer = FakeDealer(hands)
        self.handlers = TableHandlers(
            tables=self.tables, hands=hands, rooms=ROOMS, dealer=self.dealer, rules=FakeRules(),
            bot=FakeBot(), settlement=FakeSettlement(), tokens=FakeTokens(),
            ready_wait=ready_wait,
        )  # fmt: skip

    def restart(self, ready_wait: float = 30.0) -> Service:
        """A new run folding the tables back from the log (as ``app._rebuild`` does)."""
        again = Service(self.log, self.dealer.hands, ready_wait)
        for events in self.log.streams.values():
            history = TableHistory(replay(events), TableCursor(len(events), len(events)))
            again.handlers.seating.restore(again.tables.restore(history))
        return again


@pytest.fixture
async def hands() -> AsyncIterator[FakeHands]:
    yield FakeHands()


def ended(hand_id: str) -> HandFold:
    fold = in_play(hand_id, SEATS, Phase.ENDED)
    fold.state = dataclasses.replace(fold.state, seed="5eed")
    return fold


async def until(probe: object, what: str) -> None:
    for _ in range(200):
        if callable(probe) and probe():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def a_played_hand(service: Service) -> Table:
    """A room table of alice (seat 0) and bob (seat 1), its first hand over."""
    table = service.tables.open(CLASSIC, RoomSettings(), list(SEATS), "t1", room_id="slow")
    for seat in (0, 1):
        service.handlers.seating.lobby.sit(SEATS[seat].player_id, Seat("t1", seat))
    service.tables.add_hand(table, HandAssigned("h1"))
    service.dealer.hands.folds["h1"] = ended("h1")
    await service.tables.recorded(table)
    return table


async def test_a_restart_resumes_the_round_and_the_other_seat_gets_the_hand(
    hands: FakeHands,
) -> None:
    first = Service(MemoryLog(), hands)
    table = await a_played_hand(first)
    asking = asyncio.ensure_future(first.handlers.joining.next_hand("s-alice-t1-0", "t1"))
    await until(lambda: table.next_round is not None, "alice's ask")
    await first.tables.recorded(table)
    said = first.log.streams["t1"][-1]
    assert isinstance(said, SeatReady) and (said.seat, said.hand_number) == (0, 1)
    asking.cancel()  # the service goes, her call with it
    await asyncio.gather(asking, return_exceptions=True)
    await first.handlers.close()

    second = first.restart()
    again = second.tables.get("t1")
    assert again is not None and again.next_round is not None
    assert again.next_round.ready == {0} and again.next_round.since == said.said_at
    hand_id, _first_bidder = await second.handlers.joining.next_hand("s-bob-t1-1", "t1")
    assert again.hand_ids == ["h1", hand_id] and len(second.dealer.orders) == 1
    await second.handlers.close()


async def test_a_resumed_round_runs_its_wait_from_the_first_ask(hands: FakeHands) -> None:
    log = MemoryLog()
    # Alice asked 29.8 s before the restart: 0.2 s of the 30 s wait are left.
    log.streams["t1"] = [OPENED, HandAssigned("h1"), SeatReady(0, 1, time.time() - 29.8)]
    hands.folds["h1"] = ended("h1")
    service = Service(log, hands).restart(ready_wait=30.0)
    table = service.tables.get("t1")
    assert table is not None and table.next_round is not None
    await until(lambda: table.closed, "the ready wait to run out")
    assert table.closed_reason == "bob did not come back for the next hand"
    assert table.left == {1: "bob"} and service.dealer.orders == []
    await service.tables.recorded(table)
    assert log.streams["t1"][-2:] == [PlayerLeft(1, "bob"), TableClosed(table.closed_reason)]
    await service.handlers.close()


async def test_a_deal_lost_every_time_is_withdrawn_on_the_stream(hands: FakeHands) -> None:
    first = Service(MemoryLog(), hands)
    people = (SeatInfo("alice"), SeatInfo("bob"), SeatInfo("bot-t-2", is_bot=True))
    first.handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, people))
    # every request held by a stalled dealer, none dealt: called off, then withdrawn (a
    # deal whose answers were lost but which was dealt is played, test_table_handlers)
    first.dealer.stalled = DEAL_ATTEMPTS
    with pytest.raises(Refusal) as refused:
        await first.handlers.dealing.start_hand("op", "t9", (), ())
    assert refused.value.kind is Kind.TIMEOUT
    table = first.tables.get("t9")
    assert table is not None and table.hand_ids == []
    await first.tables.recorded(table)
    withdrawn = first.log.streams["t9"][-1]
    assert isinstance(withdrawn, HandWithdrawn)
    assert withdrawn.hand_id == first.dealer.orders[0].hand_id
    assert f"lost {DEAL_ATTEMPTS} times" in withdrawn.reason
    again = first.restart().tables.get("t9")
    assert again is not None and again.hand_ids == []


async def test_a_rebuild_withdraws_a_hand_never_dealt_once_the_log_is_set(
    hands: FakeHands,
) -> None:
    log = MemoryLog()
    log.streams["t1"] = [OPENED, HandAssigned("h1")]
    tables = Tables()
    table = tables.restore(TableHistory(replay(log.streams["t1"]), TableCursor(2, 2)))
    tables.drop_hand(table, "h1")  # not on the bus: assigned, never dealt
    assert log.streams["t1"] == [OPENED, HandAssigned("h1")]
    tables.log = log
    await tables.recorded(table)
    assert log.streams["t1"][-1] == HandWithdrawn("h1", "assigned, never dealt")
    assert replay(log.streams["t1"]).hand_ids == ()


# -- the queues ------------------------------------------------------------------------------


async def test_kept_tickets_are_queued_again_and_the_fill_wait_counts_from_their_join(
    hands: FakeHands,
) -> None:
    service = Service(MemoryLog(), hands)
    # Joined long ago: 0.1 s of the 50 s wait are left (from a restart: 50 s again).
    joined = time.time() - WAIT + 0.1
    kept = MemoryQueue(QueuedTicket("slow", "bob", joined + 0.01, None),
                       QueuedTicket("slow", "ann", joined, None))  # fmt: skip
    seating = service.handlers.seating
    assert await seating.restore_queues(kept) == 2
    assert [t.player_id for t in seating.lobby.queues["slow"]] == ["ann", "bob"]
    back = await asyncio.wait_for(service.handlers.joining.join_room("p-ann", "slow", ""), 5)
    assert back.seat == 0 and not back.rejoined
    table = back.table.table
    assert [s.player_id for s in table.seats[:2]] == ["ann", "bob"] and table.seats[2].is_bot
    assert seating.lobby.place_of("bob") == Seat(table.table_id, 1)  # seated while away
    assert kept.kept == {}  # seated: out of the bucket
    bob = await service.handlers.joining.join_room("p-bob", "slow", "")
    assert bob.rejoined and (bob.table.table.table_id, bob.seat) == (table.table_id, 1)
    await service.handlers.close()


async def test_three_tickets_kept_and_joined_again_sit_at_one_table_each_once(
    hands: FakeHands,
) -> None:
    service = Service(MemoryLog(), hands)
    now = time.time()
    kept = MemoryQueue(QueuedTicket("slow", "ann", now - 3, None),
                       QueuedTicket("slow", "bob", now - 2, None))  # fmt: skip
    joining = service.handlers.joining
    await service.handlers.seating.restore_queues(kept)
    ann = asyncio.ensure_future(joining.join_room("p-ann", "slow", ""))
    await asyncio.sleep(0)
    with pytest.raises(Refusal) as twice:  # her place is waited on already
        await joining.join_room("p-ann", "slow", "")
    assert twice.value.kind is Kind.EXISTS
    cy = await joining.join_room("p-cy", "slow", "")
    seated = {cy.table.table.seats[n].player_id: n for n in range(3)}
    assert seated == {"ann": 0, "bob": 1, "cy": 2}
    assert (await ann).table.table is cy.table.table
    assert len(service.dealer.orders) == 1 and service.handlers.seating.lobby.queued("slow") == 0
    await service.handlers.close()


async def test_a_ticket_of_a_player_seated_at_a_restored_table_is_dropped(
    hands: FakeHands,
) -> None:
    first = Service(MemoryLog(), hands)
    await a_played_hand(first)
    second = first.restart()
    kept = MemoryQueue(QueuedTicket("slow", "alice", time.time(), None),
                       QueuedTicket("gone", "cy", time.time(), None))  # fmt: skip
    assert await second.handlers.seating.restore_queues(kept) == 0
    assert kept.kept == {} and second.handlers.seating.lobby.place_of("cy") is None
    assert second.handlers.seating.lobby.place_of("alice") == Seat("t1", 0)
    await second.handlers.close()


async def test_a_cut_join_keeps_its_place_for_the_grace_then_leaves_the_queue(
    hands: FakeHands, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lobby_module, "REJOIN_GRACE", 0.05)
    service = Service(MemoryLog(), hands)
    kept = MemoryQueue()
    await service.handlers.seating.restore_queues(kept)
    joining = service.handlers.joining
    call = asyncio.ensure_future(joining.join_room("p-ann", "slow", ""))
    await until(lambda: "slow.ann" in kept.kept, "ann's ticket kept")
    joined = kept.kept["slow.ann"].joined
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    lobby = service.handlers.seating.lobby
    back = lobby.attend("ann", "slow")  # within the grace: the same ticket
    assert back is not None and back.joined == joined
    lobby.detach(back)
    await until(lambda: lobby.place_of("ann") is None, "the grace to end")
    assert kept.kept == {} and lobby.queued("slow") == 0
    await service.handlers.close()
