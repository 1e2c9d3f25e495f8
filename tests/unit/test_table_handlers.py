"""The table service's use cases with fake ports: no server, no bus. The dealer fake
puts each hand it deals in the fake feed (in bidding), the rules fake answers what the
test tells it to, tokens are plain names ("op", "p-<player>", "s-<player>-<table>-<seat>").
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator

import pytest
from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.cards import parse_ranks
from ddz.domain.hand import (
    Escape,
    Pass,
    Play,
    RejectReason,
    SeatInfo,
)
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import HandAssigned
from table_fakes import (
    FakeBot,
    FakeDealer,
    FakeHands,
    FakeRules,
    FakeSettlement,
    FakeTokens,
    in_play,
)

from services.table.use_cases import dealing
from services.table.use_cases.dealing import TableSpec
from services.table.use_cases.handlers import TableHandlers
from services.table.use_cases.lobby import Seat
from services.table.use_cases.moves import REFUSALS, refusal_of
from services.table.use_cases.ports import Decision
from services.table.use_cases.rooms import Room, Rooms
from services.table.use_cases.tables import Table, Tables

CLASSIC = ruleset_for("classic")
ROOMS = Rooms(
    (
        Room("classic", "Classic", CLASSIC, RoomSettings(), bot_fill_wait=0.0),
        Room("rich", "Rich", CLASSIC, RoomSettings(min_balance=1000), bot_fill_wait=0.0),
    ),
    opening_balance=100,
)
PEOPLE = (SeatInfo("alice"), SeatInfo("bob"), SeatInfo("bot-t-2", is_bot=True))


class World:
    def __init__(self) -> None:
        self.tables = Tables()
        self.hands = FakeHands()
        self.dealer = FakeDealer(self.hands)
        self.rules = FakeRules()
        self.settlement = FakeSettlement()
        self.handlers = TableHandlers(
            tables=self.tables, hands=self.hands, rooms=ROOMS, dealer=self.dealer,
            rules=self.rules, bot=FakeBot(), settlement=self.settlement, tokens=FakeTokens(),
            ready_wait=30.0,
        )  # fmt: skip

    def hand_at_table(self) -> tuple[Table, str]:
        """An operator's table of alice (seat 0), bob (1) and a bot, its hand in play."""
        table = self.tables.open(CLASSIC, RoomSettings(), list(PEOPLE), "t1")
        hand_id = uuid.uuid4().hex
        self.tables.add_hand(table, HandAssigned(hand_id))
        self.hands.folds[hand_id] = in_play(hand_id, PEOPLE)
        return table, hand_id


@pytest.fixture
async def world() -> AsyncIterator[World]:
    w = World()
    yield w
    await w.handlers.close()


def refused(excinfo: pytest.ExceptionInfo[Refusal]) -> tuple[Kind, Reason]:
    return excinfo.value.kind, excinfo.value.reason


# -- rooms ------------------------------------------------------------------------------


async def test_joining_a_room_seats_the_player_at_a_new_table(world: World) -> None:
    joined = await world.handlers.joining.join_room("p-alice", "classic", "")

    table = joined.table.table
    assert (joined.room.room_id, joined.seat, joined.rejoined) == ("classic", 0, False)
    assert table.seats[0].player_id == "alice"
    assert all(s.is_bot for s in table.seats[1:])  # the room filled the rest with bots
    assert joined.seat_pass.token == f"s-alice-{table.table_id}-0"
    assert [o.table_id for o in world.dealer.orders] == [table.table_id]  # first hand dealt
    assert joined.table.hand_in_play == table.last_hand_id
    assert world.handlers.seating.lobby.place_of("alice") == Seat(table.table_id, 0)
    assert joined.balance is None  # a points room without a minimum checks none


async def test_joining_again_comes_back_to_the_seat(world: World) -> None:
    first = await world.handlers.joining.join_room("p-alice", "classic", "")
    again = await world.handlers.joining.join_room("p-alice", "classic", "")
    assert again.rejoined and again.table.table is first.table.table and again.seat == 0
    assert len(world.dealer.orders) == 1


async def test_balance_too_low_is_refused_and_the_reservation_released(world: World) -> None:
    world.settlement.balances["alice"] = 899  # + opening 100 = 999 < 1000
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.joining.join_room("p-alice", "rich", "")

    assert refused(excinfo) == (Kind.PRECONDITION, Reason.BALANCE_TOO_LOW)
    assert "999" in excinfo.value.message and "1000" in excinfo.value.message
    assert world.handlers.seating.lobby.place_of("alice") is None
    assert world.dealer.orders == []
    # Released: the player may join elsewhere at once.
    joined = await world.handlers.joining.join_room("p-alice", "classic", "")
    assert joined.seat == 0


async def test_enough_balance_joins_with_it(world: World) -> None:
    world.settlement.balances["alice"] = 900
    joined = await world.handlers.joining.join_room("p-alice", "rich", "")
    assert joined.balance == 1000


@pytest.mark.parametrize(
    ("token", "room", "asked", "expected"),
    [
        (None, "classic", "", (Kind.UNAUTHENTICATED, Reason.UNAUTHENTICATED)),
        ("garbage", "classic", "", (Kind.UNAUTHENTICATED, Reason.UNAUTHENTICATED)),
        ("s-alice-t1-0", "classic", "", (Kind.DENIED, Reason.PERMISSION_DENIED)),
        ("p-alice", "classic", "bob", (Kind.DENIED, Reason.PERMISSION_DENIED)),
        ("op", "classic", "", (Kind.INVALID, Reason.INVALID_ARGUMENT)),
        ("op", "classic", "bot-x", (Kind.INVALID, Reason.INVALID_ARGUMENT)),
        ("p-no spaces", "classic", "", (Kind.INVALID, Reason.INVALID_ARGUMENT)),
        ("p-alice", "nowhere", "", (Kind.NOT_FOUND, Reason.UNKNOWN_ROOM)),
    ],
)
async def test_who_may_join(
    world: World, token: str | None, room: str, asked: str, expected: tuple[Kind, Reason]
) -> None:
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.joining.join_room(token, room, asked)
    assert refused(excinfo) == expected
    assert world.dealer.orders == []


async def test_leaving_mid_hand_is_an_escape(world: World) -> None:
    joined = await world.handlers.joining.join_room("p-alice", "classic", "")
    table = joined.table.table

    left = await world.handlers.joining.leave_room("p-alice", "", "")

    assert (left.table_id, left.seat, left.escaped_hand_id) == (
        table.table_id, 0, table.last_hand_id,
    )  # fmt: skip
    assert world.rules.sent == [(table.last_hand_id, Escape(0))]
    assert table.closed and table.left == {0: "alice"}
    assert world.handlers.seating.lobby.place_of("alice") is None
    with pytest.raises(Refusal) as excinfo:  # nowhere to leave any more
        await world.handlers.joining.leave_room("p-alice", "", "")
    assert refused(excinfo) == (Kind.PRECONDITION, Reason.WRONG_PHASE)


async def test_a_seat_token_leaves_its_own_seat_only(world: World) -> None:
    joined = await world.handlers.joining.join_room("p-alice", "classic", "")
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.joining.leave_room("s-alice-elsewhere-0", "", "")
    assert refused(excinfo) == (Kind.DENIED, Reason.PERMISSION_DENIED)
    assert not joined.table.table.closed


# -- tables and hands ---------------------------------------------------------------------


async def test_unknown_table_is_not_found(world: World) -> None:
    for call in (
        lambda: world.handlers.dealing.get_table("op", "nope"),
        lambda: world.handlers.joining.next_hand("op", "nope"),
        lambda: world.handlers.dealing.start_hand("op", "nope", (), ()),
    ):
        with pytest.raises(Refusal) as excinfo:
            result = call()
            if hasattr(result, "__await__"):
                await result
        assert refused(excinfo) == (Kind.NOT_FOUND, Reason.UNKNOWN_TABLE)


async def test_unknown_hand_is_not_found_and_a_bad_id_invalid(world: World) -> None:
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.watching.view("op", uuid.uuid4().hex, 0, 0, 0.0)
    assert refused(excinfo) == (Kind.NOT_FOUND, Reason.UNKNOWN_HAND)
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.watching.view("op", "no.such*hand", 0, 0, 0.0)
    assert refused(excinfo) == (Kind.INVALID, Reason.UNKNOWN_HAND)


async def test_start_hand_while_one_is_in_play_is_wrong_phase(world: World) -> None:
    spec = TableSpec("t9", "classic", None, None, PEOPLE)
    shown = world.handlers.dealing.open_table("op", spec)
    started = await world.handlers.dealing.start_hand("op", "t9", (), ())
    assert started.hand_id == shown.table.last_hand_id and started.dealt.commitment == "c0ffee"

    with pytest.raises(Refusal) as excinfo:
        await world.handlers.dealing.start_hand("op", "t9", (), ())

    assert refused(excinfo) == (Kind.PRECONDITION, Reason.WRONG_PHASE)
    assert started.hand_id in excinfo.value.message
    assert len(world.dealer.orders) == 1 and shown.table.hand_ids == [started.hand_id]


async def test_opening_tables_is_the_operators(world: World) -> None:
    spec = TableSpec("t9", "classic", None, None, PEOPLE)
    with pytest.raises(Refusal) as excinfo:
        world.handlers.dealing.open_table("p-alice", spec)
    assert refused(excinfo) == (Kind.DENIED, Reason.PERMISSION_DENIED)
    world.handlers.dealing.open_table("op", spec)
    with pytest.raises(Refusal) as excinfo:
        world.handlers.dealing.open_table("op", spec)
    assert refused(excinfo) == (Kind.EXISTS, Reason.INVALID_ARGUMENT)
    with pytest.raises(Refusal) as excinfo:
        world.handlers.dealing.open_table(
            "op", dataclasses.replace(spec, table_id="", variant="chess")
        )
    assert refused(excinfo) == (Kind.INVALID, Reason.INVALID_ARGUMENT)


# -- moves ----------------------------------------------------------------------------------

THREES = Play(0, parse_ranks("33"), None)


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("does_not_beat", (Kind.PRECONDITION, Reason.DOES_NOT_BEAT)),
        ("not_a_combination", (Kind.INVALID, Reason.NOT_A_COMBINATION)),
        ("not_your_turn", (Kind.PRECONDITION, Reason.NOT_YOUR_TURN)),
        ("invalid_bid", (Kind.INVALID, Reason.INVALID_ARGUMENT)),
        ("already_shown", (Kind.PRECONDITION, Reason.WRONG_PHASE)),
        ("something_new", (Kind.PRECONDITION, Reason.REASON_UNSPECIFIED)),
    ],
)
async def test_a_rules_refusal_becomes_the_callers(
    world: World, reason: str, expected: tuple[Kind, Reason]
) -> None:
    _table, hand_id = world.hand_at_table()
    world.rules.answer = Decision(False, reason, f"refused: {reason}", 4, [])

    with pytest.raises(Refusal) as excinfo:
        await world.handlers.moves.move("p-alice", hand_id, THREES, 0.0)

    assert refused(excinfo) == expected
    assert excinfo.value.message == f"refused: {reason}"
    assert world.rules.sent == [(hand_id, THREES)]
    assert world.hands.learned == [hand_id]  # the recorded refusal is folded all the same


def test_every_rules_refusal_has_its_row() -> None:
    assert set(REFUSALS) == set(RejectReason)
    assert refusal_of("wrong_phase", "").message == "wrong_phase"  # no message: the code


async def test_an_accepted_move_answers_with_the_seats_view(world: World) -> None:
    table, hand_id = world.hand_at_table()
    moved = await world.handlers.moves.move("s-bob-t1-1", hand_id, Pass(1), 0.0)
    assert (moved.version, moved.seen.view.seat, moved.seen.table_id) == (4, 1, table.table_id)


@pytest.mark.parametrize(
    "token",
    [
        "s-alice-t1-1",  # a seat token for another seat of the table
        "s-alice-t2-0",  # for the seat at another table
        "p-bob",  # a player token of the player of another seat
    ],
)
async def test_a_token_for_another_seat_is_denied(world: World, token: str) -> None:
    _table, hand_id = world.hand_at_table()
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.moves.move(token, hand_id, THREES, 0.0)
    assert refused(excinfo) == (Kind.DENIED, Reason.PERMISSION_DENIED)
    assert world.rules.sent == []


async def test_a_seat_that_left_is_denied(world: World) -> None:
    table, hand_id = world.hand_at_table()
    table.left[0] = "alice"
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.moves.move("s-alice-t1-0", hand_id, THREES, 0.0)
    assert refused(excinfo) == (Kind.DENIED, Reason.PERMISSION_DENIED)


async def test_no_such_seat_is_invalid(world: World) -> None:
    _table, hand_id = world.hand_at_table()
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.moves.move("op", hand_id, Pass(3), 0.0)
    assert refused(excinfo) == (Kind.INVALID, Reason.UNKNOWN_SEAT)


async def test_hint_without_a_seat_uses_the_tokens(world: World) -> None:
    _table, hand_id = world.hand_at_table()
    move = await world.handlers.watching.hint("p-bob", hand_id, None)
    assert move.text == "pass"
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.watching.hint("op", hand_id, None)
    assert refused(excinfo) == (Kind.INVALID, Reason.UNKNOWN_SEAT)


async def test_a_deal_whose_answer_was_lost_is_asked_for_again_as_the_same_order(
    world: World,
) -> None:
    """The dealer dealt, its answer was lost: the table asks again with the same order
    (the dealer answers a repeat as the first) rather than dropping a hand in play."""
    shown = world.handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, PEOPLE))
    world.dealer.lose_answers = 2
    started = await world.handlers.dealing.start_hand("op", "t9", (), ())
    assert [o.hand_id for o in world.dealer.orders] == [started.hand_id] * 3
    assert len({o.request_id for o in world.dealer.orders}) == 1
    assert shown.table.hand_ids == [started.hand_id]


async def test_a_deal_dealt_whose_answers_were_all_lost_is_played_not_withdrawn(
    world: World,
) -> None:
    """Dealt three times over, each answer lost: the table calls the deal off, and the
    dealer answers "dealt" with the hand, which the table then plays."""
    shown = world.handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, PEOPLE))
    world.dealer.lose_answers = 3
    started = await world.handlers.dealing.start_hand("op", "t9", (), ())
    assert len(world.dealer.orders) == 3 and len(world.dealer.cancels) == 1
    assert world.dealer.cancels[0].request_id == world.dealer.orders[0].request_id
    assert shown.table.hand_ids == [started.hand_id]
    assert world.hands.learned == [started.hand_id]
    assert shown.table.state is not None
    assert shown.table.state.last_assigned is not None  # no hand_withdrawn
    assert shown.table.state.last_assigned.hand_id == started.hand_id


async def test_a_deal_stalled_every_time_is_called_off_then_withdrawn_and_refused(
    world: World,
) -> None:
    """The dealer held all three requests (none answered, none dealt yet): the table
    withdraws the hand only once the dealer answered "cancelled", and a late deal of it
    (the stalled dealer going on) is refused."""
    shown = world.handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, PEOPLE))
    world.dealer.stalled = 3
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.dealing.start_hand("op", "t9", (), ())
    assert refused(excinfo)[0] is Kind.TIMEOUT
    (order,) = {o.hand_id: o for o in world.dealer.orders}.values()
    assert len(world.dealer.orders) == 3 and world.dealer.cancels == [order]
    assert shown.table.hand_ids == [] and world.tables.table_of(order.hand_id) is None
    assert shown.table.state is not None and shown.table.state.last_assigned is None  # withdrawn
    with pytest.raises(Refusal):
        world.dealer.dealt(order)  # the stalled request, arriving late
    assert world.hands.learned == []


async def test_a_cancel_whose_answer_is_lost_once_is_asked_again(world: World) -> None:
    shown = world.handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, PEOPLE))
    world.dealer.stalled, world.dealer.lose_cancels = 3, 1
    with pytest.raises(Refusal):
        await world.handlers.dealing.start_hand("op", "t9", (), ())
    assert len(world.dealer.cancels) == 2 and shown.table.hand_ids == []
    assert shown.table.state is not None and shown.table.state.last_assigned is None


async def test_a_deal_neither_answered_nor_called_off_is_never_withdrawn(world: World) -> None:
    """Neither the deal nor its cancel answered: whether the hand is dealt is unknown,
    so no ``hand_withdrawn`` is written (the next holder of the table asks the dealer
    again, ``finish``); it is only forgotten in memory."""
    shown = world.handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, PEOPLE))
    world.dealer.stalled, world.dealer.lose_cancels = 3, 5
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.dealing.start_hand("op", "t9", (), ())
    assert refused(excinfo)[0] is Kind.TIMEOUT
    assert len(world.dealer.cancels) == 5 and shown.table.hand_ids == []
    assert shown.table.state is not None and shown.table.state.last_assigned is not None
    assert shown.table.state.last_assigned.hand_id == world.dealer.orders[0].hand_id


async def test_dealt_before_after_a_lost_answer_is_the_first_attempt_and_asked_again(
    world: World,
) -> None:
    world.handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, PEOPLE))
    world.dealer.lose_answers, world.dealer.still_dealing = 1, 1
    started = await world.handlers.dealing.start_hand("op", "t9", (), ())
    assert [o.hand_id for o in world.dealer.orders] == [started.hand_id] * 3


async def test_dealt_before_at_the_first_attempt_is_refused_at_once(world: World) -> None:
    world.handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, PEOPLE))
    world.dealer.still_dealing = 1
    with pytest.raises(Refusal) as excinfo:
        await world.handlers.dealing.start_hand("op", "t9", (), ())
    assert refused(excinfo)[0] is Kind.EXISTS and len(world.dealer.orders) == 1


def assigned_before_a_take_over(world: World) -> tuple[Table, HandAssigned]:
    """A restored table whose last hand was assigned (its seeds and request recorded)
    but is not on the bus: the instance that asked for its deal died before the answer."""
    table = world.tables.open(CLASSIC, RoomSettings(), list(PEOPLE), "t-died")
    assigned = HandAssigned(
        uuid.uuid4().hex, 1, None, (b"\x01" * 16,), (), "deal-of-the-instance-that-died"
    )
    world.tables.add_hand(table, assigned)
    return table, assigned


async def test_a_deal_never_answered_before_a_take_over_is_asked_for_as_the_same_request(
    world: World,
) -> None:
    """The first request is still being dealt (EXISTS): asked again after a pause, as
    the very request the assignment recorded, until the dealer answers with the hand."""
    table, assigned = assigned_before_a_take_over(world)
    world.dealer.still_dealing = 1
    await world.handlers.dealing.finish(table, assigned)
    orders = world.dealer.orders
    assert [o.hand_id for o in orders] == [assigned.hand_id] * 2
    assert {(o.request_id, tuple(o.client_seeds), o.first_bidder) for o in orders} == {
        (assigned.deal_request_id, assigned.client_seeds, 1)
    }
    assert table.hand_ids == [assigned.hand_id] and world.hands.learned == [assigned.hand_id]


async def test_a_deal_the_dealer_refuses_after_a_take_over_is_withdrawn(world: World) -> None:
    table, assigned = assigned_before_a_take_over(world)
    world.dealer.refusal = Refusal.precondition(Reason.UNKNOWN_HAND, "not the table's next")
    await world.handlers.dealing.finish(table, assigned)
    assert len(world.dealer.orders) == 1 and table.hand_ids == []
    assert world.tables.table_of(assigned.hand_id) is None


async def test_a_take_over_whose_deal_is_never_answered_withdraws_it_only_once_called_off(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dealing, "DEAL_PAUSE", 0.0)  # eight attempts, not 5.6 s of pauses
    table, assigned = assigned_before_a_take_over(world)
    world.dealer.stalled = 8
    await world.handlers.dealing.finish(table, assigned)
    assert len(world.dealer.orders) == 8
    assert [c.request_id for c in world.dealer.cancels] == [assigned.deal_request_id]
    assert table.hand_ids == [] and table.state is not None and table.state.last_assigned is None


async def test_a_take_over_whose_lost_deal_was_dealt_plays_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dealing, "DEAL_PAUSE", 0.0)  # eight attempts, not 5.6 s of pauses
    table, assigned = assigned_before_a_take_over(world)
    world.dealer.lose_answers = 8
    await world.handlers.dealing.finish(table, assigned)
    assert len(world.dealer.cancels) == 1
    assert table.hand_ids == [assigned.hand_id] and world.hands.learned == [assigned.hand_id]


async def test_a_hand_looked_up_while_its_deal_is_asked_for_again_is_found_once_dealt(
    world: World,
) -> None:
    """A player who learnt the hand's id (GetTable) watches it while the deal is still
    being asked for: the call waits for the deal rather than answering UNKNOWN_HAND."""
    table, assigned = assigned_before_a_take_over(world)
    world.dealer.gate = asyncio.Event()
    finishing = asyncio.ensure_future(world.handlers.dealing.finish(table, assigned))
    await asyncio.sleep(0)  # the deal under way, the table's lock held
    looked_up = asyncio.ensure_future(world.handlers.floor.hand(assigned.hand_id))
    await asyncio.sleep(0.05)
    assert not looked_up.done()
    world.dealer.gate.set()
    assert (await looked_up).hand_id == assigned.hand_id
    await finishing
