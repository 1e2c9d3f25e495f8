"""Abuse limits of the table service, against the real suite (docs/SECURITY.md "Abuse
limits"): each player's JoinRoom/RefreshSeatToken calls and their moves and hints draw
on token buckets of their own (RESOURCE_EXHAUSTED, RATE_LIMITED, when empty; refused
calls cost nothing, operators are not limited); a seat has at most a few WatchHand
streams open at once (TOO_MANY_STREAMS, a closed one frees its slot); a closed table
and its ended hands leave nothing in memory. Seat tokens are short-lived and refreshed
(RefreshSeatToken; ``ddz play``'s session does it on its own), and a leave revokes
them, also across a restart of the table service.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable
from typing import Any

import grpc
import pytest
from ddz.access.tokens import player_token
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.client.session import Session
from ddz.v1 import hand_events_pb2, table_pb2
from suite_kit import Suite, eventually
from table_kit import ENDED, Watcher, drive, join, view_of

EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
DENIED = grpc.StatusCode.PERMISSION_DENIED
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
NOT_NOW = {"WRONG_PHASE", "NOT_YOUR_TURN"}
"""What the rules answer a pass while the hand is bidding."""


async def table_with(suite: Suite, **table: Any) -> None:
    """Start the table service again with these table settings (before anybody sits)."""
    await suite.stop("table")
    changed = dataclasses.replace(suite.settings.table, **table)
    suite.settings = dataclasses.replace(suite.settings, table=changed)
    await suite.start("table")


def table_app(suite: Suite) -> Any:
    return suite.running["table"].service


async def refused(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc
    raise AssertionError("answered a call it must refuse")


async def outcome(call: Awaitable[Any]) -> str:
    """``"ok"``, or the refused call's reason name."""
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return error_reason(exc) or exc.code().name
    return "ok"


def pass_(stub: Any, hand_id: str, seat: int) -> Awaitable[Any]:
    return stub.Pass(table_pb2.PassRequest(hand_id=hand_id, seat=seat))


def refresh(stub: Any) -> Awaitable[Any]:
    return stub.RefreshSeatToken(table_pb2.RefreshSeatTokenRequest())


async def two_seated(suite: Suite) -> tuple[Any, Any]:
    ann, ben = await asyncio.gather(
        join(suite.player("ann"), "classic"), join(suite.player("ben"), "classic")
    )
    assert ann.table.table_id == ben.table.table_id
    return ann, ben


# --- rates ------------------------------------------------------------------------------


async def test_each_players_moves_and_joins_are_rate_limited(suite: Suite) -> None:
    # Buckets that barely refill: what is spent stays spent for the test.
    await table_with(suite, move_burst=3, move_rate=0.001, join_burst=2, join_rate=0.001)
    ann, ben = await two_seated(suite)  # one JoinRoom each
    hand_id, seat = ann.hand_id, ann.seat
    ann_seat, ben_seat = suite.table_as(ann.token), suite.table_as(ben.token)

    # Calls refused before they would reach the rules cost nobody anything.
    for _ in range(5):
        assert await outcome(pass_(ben_seat, hand_id, seat)) == "PERMISSION_DENIED"
    # Ann's three moves go to the rules (a pass while bidding is refused there), the
    # fourth -- from any token of hers, a hint too -- is refused here.
    for _ in range(3):
        assert await outcome(pass_(ann_seat, hand_id, seat)) in {"ok", *NOT_NOW}
    exc = await refused(pass_(ann_seat, hand_id, seat))
    assert exc.code() is EXHAUSTED and error_reason(exc) == "RATE_LIMITED"
    assert "try again in" in (exc.details() or "")
    exc = await refused(suite.player("ann").Pass(table_pb2.PassRequest(hand_id=hand_id, seat=seat)))
    assert error_reason(exc) == "RATE_LIMITED"
    hint = table_pb2.HintRequest(hand_id=hand_id, seat=seat)
    assert error_reason(await refused(ann_seat.Hint(hint))) == "RATE_LIMITED"
    # What is not limited still answers her: her view.
    assert (await view_of(ann_seat, hand_id, seat)).seat == seat
    # Ben's bucket is his own; the operator has none. Hints, as they change nothing: the
    # seat on turn gets its hint, the others NOT_YOUR_TURN; nobody RATE_LIMITED.
    bens = table_pb2.HintRequest(hand_id=hand_id, seat=ben.seat)
    assert await outcome(ben_seat.Hint(bens)) in {"ok", *NOT_NOW}
    for _ in range(6):
        assert await outcome(suite.table.Hint(hint)) in {"ok", *NOT_NOW}

    # Joining: Ann's second JoinRoom (back to her seat) is her last one for now; a
    # refresh draws on the same bucket; the operator may still join her.
    again = await join(suite.player("ann"), "classic")
    assert again.rejoined and again.seat == seat
    exc = await refused(join(suite.player("ann"), "classic"))
    assert exc.code() is EXHAUSTED and error_reason(exc) == "RATE_LIMITED"
    assert error_reason(await refused(refresh(ann_seat))) == "RATE_LIMITED"
    by_operator = await join(suite.table, "classic", player_id="ann")
    assert by_operator.rejoined and by_operator.seat == seat


# --- streams ----------------------------------------------------------------------------


async def test_a_seat_has_a_few_streams_at_most_and_a_closed_one_frees_its_slot(
    suite: Suite,
) -> None:
    most = suite.settings.table.seat_streams
    assert most == 4  # the default
    ann = await join(suite.player("ann"), "classic")
    hand_id, seat = ann.hand_id, ann.seat
    request = table_pb2.WatchHandRequest(hand_id=hand_id, seat=seat)
    slots = table_app(suite).handlers.watching.streams
    streams = [suite.table_as(ann.token).WatchHand(request, timeout=60) for _ in range(most)]
    for stream in streams:
        assert (await stream.read()).position > 0  # open, and counted
    assert slots.open[(hand_id, seat)] == most

    for stub in (suite.table_as(ann.token), suite.player("ann")):  # per seat, not per token
        exc = await refused(stub.WatchHand(request, timeout=60).read())
        assert exc.code() is EXHAUSTED and error_reason(exc) == "TOO_MANY_STREAMS"
    operator = suite.table.WatchHand(request, timeout=60)  # an operator's is not counted
    assert (await operator.read()).position > 0
    operator.cancel()

    streams.pop().cancel()  # the client closes one: its slot is free again
    await eventually(lambda: _async(slots.open[(hand_id, seat)] == most - 1))
    another = suite.table_as(ann.token).WatchHand(request, timeout=60)
    assert (await another.read()).position > 0
    streams.append(another)
    for stream in streams:
        stream.cancel()
    await eventually(lambda: _async((hand_id, seat) not in slots.open))


async def _async(value: Any) -> Any:
    return value


# --- memory -----------------------------------------------------------------------------


@pytest.mark.suite(turn_timeout=3.0)  # also how long a closed table is kept
async def test_a_closed_table_and_its_ended_hands_leave_nothing_in_memory(suite: Suite) -> None:
    app = table_app(suite)
    ann = await join(suite.player("ann"), "classic")  # two bots fill the table
    table_id, seat = ann.table.table_id, ann.seat
    stub = suite.table_as(ann.token)
    hand_id, hand_ids = ann.hand_id, []
    for number in range(3):
        watcher = Watcher(stub, hand_id, seat).start()
        assert (await drive(stub, watcher)).phase == ENDED
        hand_ids.append(hand_id)
        if number < 2:
            hand_id = (await stub.NextHand(table_pb2.NextHandRequest(table_id=table_id))).hand_id
    assert all(app.feed.get(h) is not None for h in hand_ids)  # kept while the table plays
    left = await stub.LeaveRoom(table_pb2.LeaveRoomRequest())
    assert left.table_id == table_id and not left.escaped_hand_id
    # Closed, and for a while still there to say why (to the others at it).
    shown = await suite.table.GetTable(table_pb2.GetTableRequest(table_id=table_id))
    assert shown.table.closed and "ann left" in shown.table.closed_reason

    await eventually(lambda: _async(app.tables.get(table_id) is None), timeout=30)
    handlers = app.handlers
    assert table_id not in {t.table_id for t in app.tables.all()}
    assert all(app.tables.table_of(h) is None for h in hand_ids)
    assert all(app.feed.get(h) is None for h in hand_ids)
    assert handlers.seating.lobby.place_of("ann") is None
    assert not [key for key in handlers.presence.open if key[0] in hand_ids]
    assert not [key for key in handlers.watching.streams.open if key[0] in hand_ids]
    assert app.clock.running == 0

    # Forgotten, not lost: the operator reads the hands back from the bus; the table's
    # seat tokens name nothing here any more.
    exc = await refused(suite.table.GetTable(table_pb2.GetTableRequest(table_id=table_id)))
    assert exc.code() is grpc.StatusCode.NOT_FOUND
    assert (await view_of(suite.table, hand_ids[0], seat)).phase == ENDED
    assert (await refused(refresh(stub))).code() is DENIED
    assert (await refused(view_of(stub, hand_ids[-1], seat))).code() is DENIED


# --- seat tokens ------------------------------------------------------------------------


async def test_seat_tokens_are_short_lived_and_refreshed_while_the_seat_is_held(
    suite: Suite,
) -> None:
    ttl = 4.0
    await table_with(suite, seat_token_ttl=ttl)
    before = time.time()
    ann = await join(suite.player("ann"), "classic")
    assert before + ttl - 1 <= ann.token_expires <= time.time() + ttl + 1
    old = suite.table_as(ann.token)
    fresh = await refresh(old)
    assert (fresh.table_id, fresh.seat) == (ann.table.table_id, ann.seat)
    assert fresh.token != ann.token and fresh.token_expires >= ann.token_expires
    new = suite.table_as(fresh.token)
    assert (await view_of(new, ann.hand_id, ann.seat)).seat == ann.seat
    # Only a seat token is refreshed: player and operator tokens come from the login.
    for stub in (suite.player("ann"), suite.table):
        assert (await refused(refresh(stub))).code() is DENIED

    async def outlives_the_first() -> Any:
        later = await refresh(new)  # each refresh lasts from now
        return later if later.token_expires > ann.token_expires else None

    later = await eventually(outlives_the_first, timeout=ttl, every=0.2)
    while time.time() <= ann.token_expires:  # the first token's life runs out
        await asyncio.sleep(0.2)
    for call in (view_of(old, ann.hand_id, ann.seat), refresh(old)):
        exc = await refused(call)
        assert exc.code() is UNAUTHENTICATED and "expired" in (exc.details() or "")
    # The refreshed one acts on and is refreshed in turn: the sitting goes on.
    again = await refresh(suite.table_as(later.token))
    assert (await view_of(suite.table_as(again.token), ann.hand_id, ann.seat)).seat == ann.seat


async def test_a_leave_revokes_the_seats_tokens_also_after_a_restart(suite: Suite) -> None:
    ann, _ben = await two_seated(suite)
    carol = await join(suite.player("carol"), "classic")  # another table, still open
    ann_seat = suite.table_as(ann.token)
    fresh = await refresh(ann_seat)  # a refreshed token is revoked with the seat
    left = await ann_seat.LeaveRoom(table_pb2.LeaveRoomRequest())
    assert left.escaped_hand_id == ann.hand_id  # the bot plays her seat on (§10.2)
    hand_id, seat = ann.hand_id, ann.seat
    play = table_pb2.PlayRequest(hand_id=hand_id, seat=seat, cards="3")
    bid = table_pb2.BidRequest(hand_id=hand_id, seat=seat, action=hand_events_pb2.BID_ACTION_PASS)

    async def revoked_and_carol_sits() -> None:
        for token in (ann.token, fresh.token):
            stub = suite.table_as(token)
            calls = (refresh(stub), view_of(stub, hand_id, seat), stub.Play(play), stub.Bid(bid))
            for call in calls:
                assert (await refused(call)).code() is DENIED
        # Carol's seat is still hers: her token is refreshed and acts.
        carol_stub = suite.table_as((await refresh(suite.table_as(carol.token))).token)
        assert (await view_of(carol_stub, carol.hand_id, carol.seat)).seat == carol.seat

    await revoked_and_carol_sits()
    await suite.stop("table")  # the leave is on the table's stream, not in a memory
    await suite.start("table")
    await revoked_and_carol_sits()


async def test_the_play_clients_session_refreshes_its_seat_token_while_it_sits(
    suite: Suite,
) -> None:
    await table_with(suite, seat_token_ttl=3.0)
    settings = suite.settings
    session = Session(
        settings.calling, settings.network.address("table"), player_token(settings.keys, "ann")
    )
    try:
        rooms = {room.room_id: room for room in (await session.rooms()).rooms}
        joined = await session.join(rooms["classic"])
        first = session.seat_token
        await eventually(lambda: _async(session.seat_token != first), timeout=30)
        while time.time() <= joined.token_expires:  # longer than the first token lived
            await asyncio.sleep(0.2)
        stale = view_of(suite.table_as(first), joined.hand_id, session.seat)
        assert (await refused(stale)).code() is UNAUTHENTICATED
        view = await session.view(joined.hand_id)  # the session's calls still go through
        assert view.seat == session.seat
    finally:
        await session.close()
