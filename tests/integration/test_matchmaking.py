"""Rooms and matchmaking (RULES.md §11) through the table service: rooms from a
file, many players joining at once, bots filling empty seats after the wait, the
minimum balance, leaving the queue, and a table's consecutive hands (§2 rotation) that
end when a player leaves.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import grpc
import pytest
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.v1 import table_pb2
from suite_kit import Suite
from table_kit import ENDED, Watcher, act, hint, join, view_of

pytestmark = pytest.mark.suite(fill=0.5)


async def refused(call: Any, code: grpc.StatusCode, reason: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() is code, caught.value.details()
    assert error_reason(caught.value) == reason
    return str(caught.value.details())


async def test_rooms_come_from_the_rooms_file(suite: Suite) -> None:
    """§11: a room fixes the variant, initial multiplier, N / rake / cap / fee and the
    minimum balance; ListRooms needs no token."""
    listed = await suite.table_as(None).ListRooms(table_pb2.ListRoomsRequest())
    rooms = {room.room_id: room for room in listed.rooms}
    assert list(rooms) == ["classic", "ct", "laizi", "tiandi", "waiting", "exact", "high"]
    assert listed.opening_balance == 10000
    ct, laizi = rooms["ct"], rooms["laizi"]
    assert (ct.variant, ct.settings.rake.numerator, ct.settings.rake.denominator) == ("ct", 1, 20)
    assert ct.settings.cap == 2000 and ct.settings.escape_penalty == 10
    assert (laizi.settings.initial_multiplier, laizi.settings.coefficient) == (2, 100)
    assert (laizi.settings.fee, laizi.settings.min_balance) == (10, 1000)
    assert laizi.bot_fill_wait_s == 0.5 and rooms["waiting"].bot_fill_wait_s == 3600


async def test_thirty_concurrent_joiners_are_each_seated_exactly_once(suite: Suite) -> None:
    """§11: every three queued players are seated at a new table at once: 30 players
    joining together make 10 full tables, nobody seated twice or at two tables, and a
    second JoinRoom of one player at the same moment never gives them a second seat."""
    players = [f"p{n:02d}" for n in range(30)]
    stubs = {p: suite.player(p) for p in players}
    calls = [join(stubs[p], "waiting") for p in players]
    calls.append(join(stubs["p07"], "waiting"))  # the same player, twice at once
    answers = await asyncio.gather(*calls, return_exceptions=True)
    seated = [a for a in answers if not isinstance(a, BaseException)]
    errors = [a for a in answers if isinstance(a, BaseException)]
    for error in errors:  # only the duplicate may fail, and only as "already there"
        assert isinstance(error, grpc.aio.AioRpcError)
        assert error.code() is grpc.StatusCode.ALREADY_EXISTS, error.details()
    assert len(errors) <= 1
    seats: dict[str, set[tuple[str, int]]] = {}
    for answer in seated:
        player = answer.table.seats[answer.seat].player_id
        seats.setdefault(player, set()).add((answer.table.table_id, answer.seat))
    assert sorted(seats) == players
    assert all(len(places) == 1 for places in seats.values()), "a player got two seats"
    tables: dict[str, list[str]] = {}
    for answer in seated:
        tables[answer.table.table_id] = [s.player_id for s in answer.table.seats]
    assert len(tables) == 10
    for table_players in tables.values():
        assert len(set(table_players)) == 3 and all(p in players for p in table_players)
    assert Counter(p for ps in tables.values() for p in ps) == Counter(players)
    # Each table's first hand was dealt at once, and each token opens its own seat.
    for answer in seated[:3]:
        own = suite.table_as(answer.token)
        view = await view_of(own, answer.hand_id, answer.seat)
        assert view.seat == answer.seat and len(view.cards) == 17
    listed = await suite.table_as(None).ListRooms(table_pb2.ListRoomsRequest())
    waiting = next(room for room in listed.rooms if room.room_id == "waiting")
    assert (waiting.queued, waiting.tables) == (0, 10)


async def test_bots_fill_the_empty_seats_after_the_wait(suite: Suite) -> None:
    """§11: after the room's wait, empty seats are filled with bots (wait 0.5 s here)."""
    started = time.monotonic()
    alone = await join(suite.player("alone"), "classic")
    waited = time.monotonic() - started
    assert waited >= 0.5, "seated before the bot fill wait"
    seats = alone.table.seats
    assert seats[alone.seat].player_id == "alone" and not seats[alone.seat].is_bot
    assert sum(seat.is_bot for seat in seats) == 2
    # Two joining together share a table with one bot.
    pair = await asyncio.gather(join(suite.player("ann"), "classic"),
                                join(suite.player("ben"), "classic"))  # fmt: skip
    assert pair[0].table.table_id == pair[1].table.table_id
    assert sorted((pair[0].seat, pair[1].seat)) == [0, 1]
    assert [seat.is_bot for seat in pair[0].table.seats] == [False, False, True]


async def test_a_player_below_the_minimum_balance_is_refused(suite: Suite) -> None:
    """§11 minimum balance: every account opens with 10000 (the rooms file); a room that
    asks 10001 refuses with the reason and both amounts; one that asks 10000 seats."""
    stub = suite.player("poor")
    message = await refused(join(stub, "high"), grpc.StatusCode.FAILED_PRECONDITION,
                            "BALANCE_TOO_LOW")  # fmt: skip
    assert "10000" in message and "10001" in message
    answer = await join(stub, "exact")  # refused players are not left in any queue
    assert answer.balance == 10000 and answer.table.room_id == "exact"


async def test_join_and_leave_rules(suite: Suite) -> None:
    """Who may join, where, and leaving the queue before being seated."""
    operator = suite.operator()
    await refused(join(operator, "classic"), grpc.StatusCode.INVALID_ARGUMENT,
                  "INVALID_ARGUMENT")  # fmt: skip
    await refused(join(suite.player("bot-x"), "classic"), grpc.StatusCode.INVALID_ARGUMENT,
                  "INVALID_ARGUMENT")  # fmt: skip
    await refused(join(suite.player("eve"), "casino"), grpc.StatusCode.NOT_FOUND, "UNKNOWN_ROOM")
    await refused(join(suite.player("eve"), "classic", player_id="mallory"),
                  grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED")  # fmt: skip

    # Waiting in a room with a long wait; leaving ends the wait with a clear refusal.
    stub = suite.player("quitter")
    waiting = asyncio.create_task(join(stub, "waiting"))
    await asyncio.sleep(0.3)
    await refused(join(stub, "classic"), grpc.StatusCode.ALREADY_EXISTS, "INVALID_ARGUMENT")
    left = await stub.LeaveRoom(table_pb2.LeaveRoomRequest(room_id="waiting"))
    assert left.dequeued and not left.table_id
    message = await refused(waiting, grpc.StatusCode.FAILED_PRECONDITION, "WRONG_PHASE")
    assert "left the queue" in message
    listed = await suite.table_as(None).ListRooms(table_pb2.ListRoomsRequest())
    assert next(r for r in listed.rooms if r.room_id == "waiting").queued == 0
    await refused(stub.LeaveRoom(table_pb2.LeaveRoomRequest()),
                  grpc.StatusCode.FAILED_PRECONDITION, "WRONG_PHASE")  # fmt: skip

    # An operator seats a player by name.
    seated = await join(operator, "classic", player_id="guest")
    assert seated.table.seats[seated.seat].player_id == "guest"


async def play_out(stub: Any, hand_id: str, seat: int) -> Any:
    """Play ``seat`` with the hints until the hand ends; the last view."""
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


async def test_consecutive_hands_rotate_the_first_bidder_until_a_player_leaves(
    suite: Suite,
) -> None:
    """§2: at one table the first hand's first bidder is the golden card's receiver,
    then it rotates one seat per hand; NextHand waits for every person; a player who
    leaves ends the table, and joining again starts a new one (golden card again)."""
    ann, ben = suite.player("ann"), suite.player("ben")
    first = await asyncio.gather(join(ann, "classic"), join(ben, "classic"))
    table_id = first[0].table.table_id
    seat = {"ann": first[0].seat, "ben": first[1].seat}
    tokens = {"ann": suite.table_as(first[0].token), "ben": suite.table_as(first[1].token)}
    hand_id = first[0].hand_id
    first_bidders = []
    for round_ in range(3):
        ends = await asyncio.gather(*(play_out(tokens[p], hand_id, seat[p]) for p in seat))
        assert all(end.phase == ENDED for end in ends)
        first_bidders.append(ends[0].first_bidder)
        if round_ == 0:
            assert ends[0].first_bidder == ends[0].golden_receiver
        if round_ == 2:
            break
        # The next hand is dealt only when both have asked for it.
        ann_next = asyncio.ensure_future(
            tokens["ann"].NextHand(table_pb2.NextHandRequest(table_id=table_id), timeout=60)
        )
        await asyncio.sleep(0.3)
        assert not ann_next.done(), "dealt before every person was ready"
        ben_next = await tokens["ben"].NextHand(table_pb2.NextHandRequest(table_id=table_id))
        assert (await ann_next).hand_id == ben_next.hand_id
        assert ben_next.first_bidder == (first_bidders[-1] + 1) % 3
        hand_id = ben_next.hand_id
    assert first_bidders[1] == (first_bidders[0] + 1) % 3
    assert first_bidders[2] == (first_bidders[1] + 1) % 3

    # Ben leaves between hands: no escape, the table closes for Ann too.
    left = await tokens["ben"].LeaveRoom(table_pb2.LeaveRoomRequest())
    assert left.table_id == table_id and not left.escaped_hand_id
    message = await refused(
        tokens["ann"].NextHand(table_pb2.NextHandRequest(table_id=table_id)),
        grpc.StatusCode.FAILED_PRECONDITION, "WRONG_PHASE",
    )  # fmt: skip
    assert "ben left" in message
    again = await join(ann, "classic")  # a new table, its first hand by the golden card
    assert again.table.table_id != table_id and not again.rejoined
    view = await view_of(suite.table_as(again.token), again.hand_id, again.seat)
    assert view.first_bidder == view.golden_receiver
