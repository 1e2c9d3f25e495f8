"""Seats belong to their players: every call that acts for a seat or reads its
cards is checked against the caller's token, and nothing a player receives -- a view, a
move's answer, a stream update -- ever holds a card another seat holds hidden (RULES.md
§1 bottom cards, §2 golden card, §6 shown hands, §8 the cards left at the end), in every
variant, during bidding, after a hand is shown and after a disconnect.

Missing, malformed, badly signed and expired tokens: UNAUTHENTICATED. A valid token for
another seat, another table, another player, or a seat its player has left:
PERMISSION_DENIED.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import grpc
import pytest
from ddz.access.tokens import Claims, sign, table_token_key
from ddz.adapters import codec
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.domain.ruleset import VARIANTS
from ddz.v1 import hand_events_pb2, table_pb2
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message
from suite_kit import Suite
from table_kit import (
    BIDDING,
    ENDED,
    Watcher,
    cards_in,
    check_updates,
    drive,
    join,
    secret_cards,
    true_states,
    typed,
    view_of,
)

Call = Callable[[Any], Awaitable[Any]]
UNAUTHENTICATED, DENIED = grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED

TABLE_RPCS = table_pb2.DESCRIPTOR.services_by_name["TableService"].methods
"""Every RPC of the table service, as the proto declares it: one added later is checked
here without anybody listing it."""
TOKEN_FREE = {"ListRooms"}
"""The RPCs that answer anybody (the rooms are public); every other one needs a token."""
SEAT_RPCS = [m.name for m in TABLE_RPCS if {"hand_id", "seat"} <= set(m.input_type.fields_by_name)]
"""The RPCs that act for a seat of a hand or read its cards: their requests name both."""


def request_for(method: MethodDescriptor, **values: Any) -> Message:
    """The smallest request of ``method`` that gets past everything but the token check:
    each of its fields named in ``values`` set (ids of a real hand, table and room)."""
    request = message_factory.GetMessageClass(method.input_type)()
    for name, value in values.items():
        if name in method.input_type.fields_by_name:
            setattr(request, name, value)
    return request


async def call(stub: Any, method: MethodDescriptor, request: Message) -> Any:
    """``method`` through ``stub``, as a client calls it; a stream: its first update."""
    assert not method.client_streaming, f"{method.name}: a client stream needs its own call"
    rpc = getattr(stub, method.name)
    if method.server_streaming:
        return await first_update(rpc(request, timeout=10))
    return await rpc(request)


def rpc_calls(names: Iterable[str], **values: Any) -> dict[str, Call]:
    """A call of each RPC named, with ``request_for(method, **values)``."""
    wanted = set(names)
    return {
        m.name: lambda s, m=m: call(s, m, request_for(m, **values))
        for m in TABLE_RPCS
        if m.name in wanted
    }


async def first_update(stream: Any) -> Any:
    async for update in stream:
        return update
    return None


def seat_calls(hand_id: str, seat: int) -> dict[str, Call]:
    """Every call that acts for ``seat`` of the hand or reads its cards."""
    pass_bid = hand_events_pb2.BID_ACTION_PASS
    return rpc_calls(SEAT_RPCS, hand_id=hand_id, seat=seat, action=pass_bid, cards="3")


def table_calls(table_id: str) -> dict[str, Call]:
    return rpc_calls(("GetTable", "NextHand"), table_id=table_id)


async def expect(code: grpc.StatusCode, calls: dict[str, Call], stub: Any) -> None:
    for name, attempt in calls.items():
        try:
            await attempt(stub)
        except grpc.aio.AioRpcError as exc:
            assert exc.code() is code, f"{name}: {exc.code()} {exc.details()}"
            assert error_reason(exc) == code.name, name
        else:
            pytest.fail(f"{name} answered a caller it must refuse with {code.name}")


async def seat_two(suite: Suite, room: str = "classic") -> tuple[Any, Any]:
    """Ann and Ben at one table of ``room`` with a bot; their JoinRoom answers."""
    ann, ben = await asyncio.gather(
        join(suite.player("ann"), room), join(suite.player("ben"), room)
    )
    assert ann.table.table_id == ben.table.table_id
    return ann, ben


async def test_missing_malformed_forged_and_expired_tokens_are_unauthenticated(
    suite: Suite,
) -> None:
    """Every RPC the proto declares, but the token-free ones, refuses a caller without a
    good token before it looks at the request (whose ids are real, so nothing else could
    refuse it first); the token-free ones answer without one."""
    ann, _ben = await seat_two(suite)
    hand_id, seat, table_id = ann.hand_id, ann.seat, ann.table.table_id
    assert {m.name for m in TABLE_RPCS} >= TOKEN_FREE, "an RPC allowed without a token is gone"
    values = {
        "hand_id": hand_id, "seat": seat, "table_id": table_id, "room_id": "classic",
        "variant": "classic", "action": hand_events_pb2.BID_ACTION_PASS, "cards": "3",
    }  # fmt: skip
    calls = rpc_calls({m.name for m in TABLE_RPCS} - TOKEN_FREE, **values)
    key = table_token_key(suite.settings.keys)
    claims = Claims("seat", "ann", int(time.time()) + 600, "n" * 32, table_id, seat)
    head, body, mac = ann.token.split(".")
    tampered = f"{head}.{body[:-2]}{'AB' if body[-2:] != 'AB' else 'CD'}.{mac}"
    expired = Claims("seat", "ann", int(time.time()) - 1, "e" * 32, table_id, seat)
    for token in (
        None,  # no token at all
        "garbage",
        tampered,  # claims changed after signing
        sign(claims, b"a key the service does not have"),
        sign(expired, key),  # the right key, past its expiry
    ):
        await expect(UNAUTHENTICATED, calls, suite.table_as(token))
    # A token that is not a Bearer token is no token either.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await suite.table_as(None).GetView(
            table_pb2.GetViewRequest(hand_id=hand_id, seat=seat),
            metadata=[("authorization", f"Basic {ann.token}")],
        )
    assert caught.value.code() is UNAUTHENTICATED
    # The real token works, and the token-free RPCs (ListRooms) need none.
    assert (await view_of(suite.table_as(ann.token), hand_id, seat)).seat == seat
    assert (await suite.table_as(None).ListRooms(table_pb2.ListRoomsRequest())).rooms
    for free in rpc_calls(TOKEN_FREE, **values).values():
        await free(suite.table_as(None))


async def test_a_token_acts_and_reads_only_for_its_own_seat(suite: Suite) -> None:
    ann, ben = await seat_two(suite)
    carol = await join(suite.player("carol"), "classic")  # another table
    assert carol.table.table_id != ann.table.table_id
    hand_id, seat = ann.hand_id, ann.seat
    ann_seat = seat_calls(hand_id, seat)
    await expect(DENIED, ann_seat, suite.table_as(ben.token))  # another seat's token
    await expect(DENIED, ann_seat, suite.player("carol"))  # another player
    await expect(DENIED, ann_seat, suite.player("ben"))
    # Carol's seat token names her own table: with Ann's seat number it is still refused.
    forged_seat = seat_calls(hand_id, carol.seat)
    await expect(DENIED, forged_seat, suite.table_as(carol.token))
    await expect(DENIED, seat_calls(hand_id, 2), suite.table_as(ann.token))  # the bot's seat
    await expect(DENIED, table_calls(ann.table.table_id), suite.table_as(carol.token))
    # Operators' calls and joining with a seat token.
    for stub in (suite.table_as(ann.token), suite.player("ann")):
        await expect(DENIED, {
            "OpenTable": lambda s: s.OpenTable(table_pb2.OpenTableRequest(variant="classic")),
            "StartHand": lambda s: s.StartHand(
                table_pb2.StartHandRequest(table_id=ann.table.table_id)),
        }, stub)  # fmt: skip
    await expect(DENIED, {"JoinRoom": lambda s: s.JoinRoom(
        table_pb2.JoinRoomRequest(room_id="classic"))}, suite.table_as(ann.token))  # fmt: skip
    # The seat's own tokens (seat token, player token) and the operator's work.
    for stub in (suite.table_as(ann.token), suite.player("ann"), suite.operator()):
        view = await view_of(stub, hand_id, seat)
        assert view.seat == seat and len(view.cards) == 17
        table = await stub.GetTable(table_pb2.GetTableRequest(table_id=ann.table.table_id))
        assert table.table.table_id == ann.table.table_id


async def test_a_token_replayed_after_leaving_is_refused(suite: Suite) -> None:
    ann, ben = await seat_two(suite)
    hand_id, table_id = ann.hand_id, ann.table.table_id
    ann_stub = suite.table_as(ann.token)
    left = await ann_stub.LeaveRoom(table_pb2.LeaveRoomRequest(room_id="classic"))
    assert left.table_id == table_id and left.escaped_hand_id == hand_id
    calls = {
        **seat_calls(hand_id, ann.seat),
        **table_calls(table_id),
        "LeaveRoom": lambda s: s.LeaveRoom(table_pb2.LeaveRoomRequest()),
    }
    await expect(DENIED, calls, ann_stub)
    await expect(DENIED, seat_calls(hand_id, ann.seat), suite.player("ann"))
    # Ben's seat is still his; Ann's seat is played by the bot (§10.2: she escaped).
    view = await view_of(suite.table_as(ben.token), hand_id, ben.seat)
    assert ann.seat in view.disconnected
    got = await suite.table_as(ben.token).GetTable(table_pb2.GetTableRequest(table_id=table_id))
    assert got.table.closed and list(got.table.left) == [ann.seat]


@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_nothing_a_player_receives_shows_another_seats_hidden_cards(
    suite: Suite, bus: EventBus, variant: str
) -> None:
    """§1/§2/§6/§8 in every variant: Ann and Ben play a hand (with a bot) from their own
    tokens; Ben shows his hand where the rules allow (§6); Ann's stream drops during the
    bidding (the bot plays her seat) and resumes later from the last position she saw.
    Every stream update, every move's answer and every view they were sent holds none
    of the cards hidden from them at that moment."""
    ann, ben = await seat_two(suite, variant)
    hand_id = ann.hand_id
    stubs = {ann.seat: suite.table_as(ann.token), ben.seat: suite.table_as(ben.token)}
    watchers = {s: Watcher(stub, hand_id, s).start() for s, stub in stubs.items()}
    received: dict[int, list[Any]] = {ann.seat: [], ben.seat: []}
    shown = False
    ann_here = asyncio.Event()  # Ben waits while Ann is away, so the hand outlasts her drop
    ann_here.set()

    async def ben_moves(view: Any) -> Any:
        nonlocal shown
        await ann_here.wait()
        if view.can_show and not shown:
            shown = True
            return table_pb2.SuggestedMove(show_cards=hand_events_pb2.ShowCardsCommand())
        answer = await stubs[ben.seat].Hint(table_pb2.HintRequest(hand_id=hand_id))
        return answer.move

    playing = [
        asyncio.create_task(drive(stubs[ann.seat], watchers[ann.seat],
                                  outcomes=received[ann.seat])),
        asyncio.create_task(drive(stubs[ben.seat], watchers[ben.seat], choose=ben_moves,
                                  outcomes=received[ben.seat])),
    ]  # fmt: skip
    # Ann's connection drops while the hand is being bid; Ben sees her go and come back.
    await watchers[ann.seat].until(lambda u: u.view.phase == BIDDING)
    ann_here.clear()
    await watchers[ann.seat].drop()
    gone = await watchers[ben.seat].until(lambda u: typed(u, "player_disconnected"))
    assert codec.decode_event(gone.event.type, 1, gone.event.payload).seat == ann.seat
    await asyncio.sleep(0.2)
    received[ann.seat].append(await view_of(stubs[ann.seat], hand_id, ann.seat))
    watchers[ann.seat].start()
    await watchers[ben.seat].until(lambda u: typed(u, "player_reconnected"))
    ann_here.set()
    ends = await asyncio.wait_for(asyncio.gather(*playing), 60)
    assert all(end.phase == ENDED for end in ends)

    states = await true_states(suite, hand_id)
    for seat, watcher in watchers.items():
        await check_updates(suite, hand_id, seat, watcher.updates)  # contiguous, no leak
        assert len(watcher.segments) == (2 if seat == ann.seat else 1)
        for message in received[seat]:
            view = message if isinstance(message, table_pb2.PlayerView) else message.outcome.view
            leaked = set(cards_in(message)) & secret_cards(states[view.version], seat)
            assert not leaked, f"seat {seat} was sent hidden cards {leaked}"
    types = {u.event.type for u in watchers[ann.seat].updates if u.HasField("event")}
    assert "cards_dealt" not in types
    if VARIANTS[variant].show_cards:
        assert "cards_shown" in types


async def test_an_id_ending_in_a_newline_cannot_join_or_open_a_table(suite: Suite) -> None:
    """``"carol\\n"`` is not ``carol``: a player token with that subject is refused before
    it joins (it would sit as someone the desk shows as carol), and so is an operator
    joining or seating such a player, or opening such a table."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await suite.player("carol\n").JoinRoom(table_pb2.JoinRoomRequest(room_id="classic"))
    assert caught.value.code() is UNAUTHENTICATED
    assert "subject is a player id" in (caught.value.details() or "")
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    refused = {
        "JoinRoom": lambda s: s.JoinRoom(
            table_pb2.JoinRoomRequest(room_id="classic", player_id="carol\n")),
        "OpenTable": lambda s: s.OpenTable(table_pb2.OpenTableRequest(
            variant="classic", seats=[table_pb2.SeatSpec(player_id=p) for p in
                                      ("carol\n", "bot-x1", "bot-x2")])),
        "OpenTable(table_id)": lambda s: s.OpenTable(table_pb2.OpenTableRequest(
            variant="classic", table_id="t1\n", seats=[table_pb2.SeatSpec(player_id=p) for p in
                                                        ("carol", "bot-x1", "bot-x2")])),
    }  # fmt: skip
    for name, attempt in refused.items():
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await attempt(suite.operator())
        assert caught.value.code() is invalid, name
        assert error_reason(caught.value) == "INVALID_ARGUMENT", name
        assert "must be 1-64 letters" in (caught.value.details() or ""), name
