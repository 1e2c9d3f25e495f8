"""Seats belong to their players (issue 7): every call that acts for a seat or reads its
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
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from ddz.adapters import codec
from ddz.adapters.bus import EventBus
from ddz.adapters.grpc_client import error_reason
from ddz.adapters.nats_server import NatsServer
from ddz.adapters.tokens import Claims, sign, table_token_key
from ddz.domain.ruleset import VARIANTS
from ddz.v1 import hand_events_pb2, table_pb2
from table_kit import (
    BIDDING,
    ENDED,
    Suite,
    Watcher,
    drive,
    join,
    running_suite,
    true_states,
    typed,
    view_of,
)
from test_table_service import cards_in, check_updates, secret_cards

Call = Callable[[Any], Awaitable[Any]]
UNAUTHENTICATED, DENIED = grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED


@pytest.fixture
async def suite(nats_server: NatsServer, bus: EventBus, tmp_path: Path) -> AsyncIterator[Suite]:
    async with running_suite(nats_server, bus, tmp_path, fill=0.3) as running:
        yield running


async def first_update(stream: Any) -> Any:
    async for update in stream:
        return update
    return None


def seat_calls(hand_id: str, seat: int) -> dict[str, Call]:
    """Every call that acts for ``seat`` of the hand or reads its cards."""
    pass_bid = hand_events_pb2.BID_ACTION_PASS
    return {
        "GetView": lambda s: s.GetView(table_pb2.GetViewRequest(hand_id=hand_id, seat=seat)),
        "WatchHand": lambda s: first_update(
            s.WatchHand(table_pb2.WatchHandRequest(hand_id=hand_id, seat=seat), timeout=10)
        ),
        "Bid": lambda s: s.Bid(table_pb2.BidRequest(hand_id=hand_id, seat=seat, action=pass_bid)),
        "ShowCards": lambda s: s.ShowCards(table_pb2.ShowCardsRequest(hand_id=hand_id, seat=seat)),
        "Play": lambda s: s.Play(table_pb2.PlayRequest(hand_id=hand_id, seat=seat, cards="3")),
        "Pass": lambda s: s.Pass(table_pb2.PassRequest(hand_id=hand_id, seat=seat)),
        "Suggest": lambda s: s.Suggest(table_pb2.TableSuggestRequest(hand_id=hand_id, seat=seat)),
        "Hint": lambda s: s.Hint(table_pb2.HintRequest(hand_id=hand_id, seat=seat)),
    }


def table_calls(table_id: str) -> dict[str, Call]:
    return {
        "GetTable": lambda s: s.GetTable(table_pb2.GetTableRequest(table_id=table_id)),
        "NextHand": lambda s: s.NextHand(table_pb2.NextHandRequest(table_id=table_id)),
    }


async def expect(code: grpc.StatusCode, calls: dict[str, Call], stub: Any) -> None:
    for name, call in calls.items():
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(stub)
        assert caught.value.code() is code, (
            f"{name}: {caught.value.code()} {caught.value.details()}"
        )
        assert error_reason(caught.value) == code.name, name


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
    ann, _ben = await seat_two(suite)
    hand_id, seat, table_id = ann.hand_id, ann.seat, ann.table.table_id
    calls = {**seat_calls(hand_id, seat), **table_calls(table_id)}
    calls["JoinRoom"] = lambda s: s.JoinRoom(table_pb2.JoinRoomRequest(room_id="classic"))
    calls["LeaveRoom"] = lambda s: s.LeaveRoom(table_pb2.LeaveRoomRequest())
    calls["OpenTable"] = lambda s: s.OpenTable(table_pb2.OpenTableRequest(variant="classic"))
    calls["StartHand"] = lambda s: s.StartHand(table_pb2.StartHandRequest(table_id=table_id))
    key = table_token_key(suite.settings)
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
        await expect(UNAUTHENTICATED, calls, suite.stub(token))
    # A token that is not a Bearer token is no token either.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await suite.stub(None).GetView(
            table_pb2.GetViewRequest(hand_id=hand_id, seat=seat),
            metadata=[("authorization", f"Basic {ann.token}")],
        )
    assert caught.value.code() is UNAUTHENTICATED
    # The real token works, and ListRooms needs none.
    assert (await view_of(suite.stub(ann.token), hand_id, seat)).seat == seat
    assert (await suite.stub(None).ListRooms(table_pb2.ListRoomsRequest())).rooms


async def test_a_token_acts_and_reads_only_for_its_own_seat(suite: Suite) -> None:
    ann, ben = await seat_two(suite)
    carol = await join(suite.player("carol"), "classic")  # another table
    assert carol.table.table_id != ann.table.table_id
    hand_id, seat = ann.hand_id, ann.seat
    ann_seat = seat_calls(hand_id, seat)
    await expect(DENIED, ann_seat, suite.stub(ben.token))  # another seat's token
    await expect(DENIED, ann_seat, suite.player("carol"))  # another player
    await expect(DENIED, ann_seat, suite.player("ben"))
    # Carol's seat token names her own table: with Ann's seat number it is still refused.
    forged_seat = seat_calls(hand_id, carol.seat)
    await expect(DENIED, forged_seat, suite.stub(carol.token))
    await expect(DENIED, seat_calls(hand_id, 2), suite.stub(ann.token))  # the bot's seat
    await expect(DENIED, table_calls(ann.table.table_id), suite.stub(carol.token))
    # Operators' calls and joining with a seat token.
    for stub in (suite.stub(ann.token), suite.player("ann")):
        await expect(DENIED, {
            "OpenTable": lambda s: s.OpenTable(table_pb2.OpenTableRequest(variant="classic")),
            "StartHand": lambda s: s.StartHand(
                table_pb2.StartHandRequest(table_id=ann.table.table_id)),
        }, stub)  # fmt: skip
    await expect(DENIED, {"JoinRoom": lambda s: s.JoinRoom(
        table_pb2.JoinRoomRequest(room_id="classic"))}, suite.stub(ann.token))  # fmt: skip
    # The seat's own tokens (seat token, player token) and the operator's work.
    for stub in (suite.stub(ann.token), suite.player("ann"), suite.operator()):
        view = await view_of(stub, hand_id, seat)
        assert view.seat == seat and len(view.cards) == 17
        table = await stub.GetTable(table_pb2.GetTableRequest(table_id=ann.table.table_id))
        assert table.table.table_id == ann.table.table_id


async def test_a_token_replayed_after_leaving_is_refused(suite: Suite) -> None:
    ann, ben = await seat_two(suite)
    hand_id, table_id = ann.hand_id, ann.table.table_id
    ann_stub = suite.stub(ann.token)
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
    view = await view_of(suite.stub(ben.token), hand_id, ben.seat)
    assert ann.seat in view.disconnected
    got = await suite.stub(ben.token).GetTable(table_pb2.GetTableRequest(table_id=table_id))
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
    stubs = {ann.seat: suite.stub(ann.token), ben.seat: suite.stub(ben.token)}
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

    states = await true_states(bus, hand_id)
    for seat, watcher in watchers.items():
        await check_updates(bus, hand_id, seat, watcher.updates)  # contiguous, no leak
        assert len(watcher.segments) == (2 if seat == ann.seat else 1)
        for message in received[seat]:
            view = message if isinstance(message, table_pb2.PlayerView) else message.outcome.view
            leaked = set(cards_in(message)) & secret_cards(states[view.version], seat)
            assert not leaked, f"seat {seat} was sent hidden cards {leaked}"
    types = {u.event.type for u in watchers[ann.seat].updates if u.HasField("event")}
    assert "cards_dealt" not in types
    if VARIANTS[variant].show_cards:
        assert "cards_shown" in types
