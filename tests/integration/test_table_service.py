"""The table service with people at the table (operator tools playing seats).

The whole suite runs in this process (the ``suite`` fixture), each service started as
its process starts it, over a real nats-server. The tests act as the operator (whose
token may act for any seat; players' own tokens are tested in test_seat_auth.py) and
play the human seats through ``TableService`` only -- with moves the bot suggests
(``TableService.Suggest``) -- while the bot service plays the others.

Every message a watched seat receives is checked against the hand's true state (read
straight from the bus, internal events included): it must never hold a card another
seat holds hidden (RULES.md §1 bottom cards, §2 golden card, §6 shown hands, §8 the
cards left at the end).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from ddz.adapters import codec
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.domain.ruleset import VARIANTS
from ddz.v1 import bot_pb2, hand_events_pb2, table_pb2, table_pb2_grpc
from suite_kit import Suite
from table_kit import BIDDING, ENDED, HAND_TIMEOUT, check_updates
from table_kit import act as send_move


async def open_table(suite: Suite, variant: str, humans: tuple[int, ...] = (0,)) -> table_pb2.Table:
    seats = [
        table_pb2.SeatSpec(player_id=f"{'human' if s in humans else 'bot'}-{s}",
                           is_bot=s not in humans)
        for s in range(3)
    ]  # fmt: skip
    opened = await suite.table.OpenTable(table_pb2.OpenTableRequest(variant=variant, seats=seats))
    return opened.table


# --- playing a seat -------------------------------------------------------------------


Chooser = Callable[[table_pb2.PlayerView], Any]


async def act(suite: Suite, view: table_pb2.PlayerView, seat: int) -> None:
    """Make the move the bot suggests for ``seat``, through TableService."""
    hand_id = view.hand_id
    hint = await suite.table.Suggest(table_pb2.TableSuggestRequest(hand_id=hand_id, seat=seat))
    await send_move(suite.table, hand_id, seat, hint.move)


async def play_seat(
    suite: Suite,
    hand_id: str,
    seat: int,
    *,
    before_bid: Callable[[table_pb2.PlayerView], Any] | None = None,
) -> list[table_pb2.WatchHandResponse]:
    """Watch ``seat`` to the end of the hand, acting whenever it is its turn; returns
    every update the stream sent."""
    updates: list[table_pb2.WatchHandResponse] = []
    stream = suite.table.WatchHand(
        table_pb2.WatchHandRequest(hand_id=hand_id, seat=seat), timeout=HAND_TIMEOUT
    )
    async for update in stream:
        updates.append(update)
        view = update.view
        if view.phase == ENDED or not view.my_turn:
            continue
        now = await suite.table.GetView(table_pb2.GetViewRequest(hand_id=hand_id, seat=seat))
        if now.view.version != update.position:
            continue  # a replayed or stale update: act on the newest one only
        if before_bid is not None and view.phase == BIDDING:
            await before_bid(view)
            before_bid = None
        try:
            await act(suite, view, seat)
        except grpc.aio.AioRpcError as exc:
            # Not our turn any more (the clock or a newer update got there first).
            assert error_reason(exc) in ("NOT_YOUR_TURN", "WRONG_PHASE"), exc
    return updates


# --- tests ----------------------------------------------------------------------------


async def test_a_person_plays_a_hand_through_the_table_service(suite: Suite) -> None:
    """One human seat (played through TableService) and two bots finish a hand (§6-§10)."""
    table = await open_table(suite, "classic", humans=(0,))
    started = await suite.table.StartHand(table_pb2.StartHandRequest(table_id=table.table_id))
    assert not started.HasField("first_bidder")  # first hand: the golden card decides (§2)
    updates = await asyncio.wait_for(play_seat(suite, started.hand_id, 0), HAND_TIMEOUT)
    final = updates[-1].view
    assert final.phase == ENDED
    assert final.seed and len(final.ledger.deltas) == 3
    assert sum(final.ledger.deltas) + final.ledger.system == 0
    moves = [
        u.event for u in updates
        if u.HasField("event") and u.event.type in ("bid_made", "play_made", "passed")
    ]  # fmt: skip
    mine = [
        e for e in moves
        if getattr(codec.decode_event(e.type, e.type_version, e.payload), "seat", -1) == 0
    ]  # fmt: skip
    assert mine, "the human seat made no move"
    view = (await suite.table.GetView(
        table_pb2.GetViewRequest(hand_id=started.hand_id, seat=0))).view  # fmt: skip
    assert view.phase == ENDED and view.version == updates[-1].position
    # The bot seats were played by the strong bot (the default DDZ_BOT_PLAYER),
    # and the rules accepted every move it sent.
    stats = await suite.bot.GetStats(bot_pb2.GetStatsRequest())
    assert stats.player == "strong"
    assert stats.accepted >= len(moves) - len(mine) and stats.refused == 0


@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_streams_never_show_another_seats_hidden_cards(suite: Suite, variant: str) -> None:
    """§1/§2/§6/§8 per variant: two people and a bot; seat 1 shows its hand at its first
    bid where the rules allow (§6); seat 0's and seat 2's streams leak nothing."""
    table = await open_table(suite, variant, humans=(0, 1))
    started = await suite.table.StartHand(table_pb2.StartHandRequest(table_id=table.table_id))
    hand_id = started.hand_id

    async def show(view: table_pb2.PlayerView) -> None:
        if view.can_show:
            await suite.table.ShowCards(table_pb2.ShowCardsRequest(hand_id=hand_id, seat=1))

    async def watch_only(seat: int) -> list[table_pb2.WatchHandResponse]:
        stream = suite.table.WatchHand(
            table_pb2.WatchHandRequest(hand_id=hand_id, seat=seat), timeout=HAND_TIMEOUT
        )
        return [update async for update in stream]

    seat0, _seat1, seat2 = await asyncio.wait_for(
        asyncio.gather(
            play_seat(suite, hand_id, 0),
            play_seat(suite, hand_id, 1, before_bid=show),
            watch_only(2),
        ),
        HAND_TIMEOUT,
    )
    await check_updates(suite, hand_id, 0, seat0)
    await check_updates(suite, hand_id, 2, seat2)
    assert seat0[-1].view.phase == ENDED
    types = {u.event.type for u in seat0 if u.HasField("event")}
    assert "cards_dealt" not in types  # the internal event never reaches a player
    if VARIANTS[variant].show_cards:
        assert "cards_shown" in types


@pytest.mark.suite(turn_timeout=1.0)
async def test_missed_turns_are_timeouts_then_auto_play_never_a_disconnect(suite: Suite) -> None:
    """RULE_DECISIONS §10.2: a person who lets DDZ_TURN_TIMEOUT pass gets one bot move
    for that turn (a timed-out turn); two in a row put the seat in auto-play and the bot
    plays it to the end. No disconnect, no escapee, and nothing hidden leaks to the
    seat's stream meanwhile. Acting again ends auto-play."""
    table = await open_table(suite, "classic", humans=(0,))
    started = await suite.table.StartHand(table_pb2.StartHandRequest(table_id=table.table_id))
    hand_id = started.hand_id
    stream = suite.table.WatchHand(
        table_pb2.WatchHandRequest(hand_id=hand_id, seat=0), timeout=HAND_TIMEOUT
    )
    updates = [update async for update in stream]  # seat 0 never acts
    await check_updates(suite, hand_id, 0, updates)
    events = [
        codec.decode_event(u.event.type, u.event.type_version, u.event.payload)
        for u in updates if u.HasField("event")
    ]  # fmt: skip
    assert not [e for e in events if type(e).__name__ == "PlayerDisconnected"]
    timed_out = [e for e in events if type(e).__name__ == "TurnTimedOut"]
    assert [e.timeouts for e in timed_out[:2]] == [1, 2] and timed_out[0].seat == 0
    assert [e.seat for e in events if type(e).__name__ == "AutoPlayStarted"] == [0]
    seat0_moves = [
        e for e in events
        if type(e).__name__ in ("BidMade", "PlayMade", "Passed") and e.seat == 0
    ]  # fmt: skip
    assert seat0_moves and all(e.acted_by.for_person for e in seat0_moves)
    final = updates[-1].view
    assert final.phase == ENDED and 0 in final.auto_play and 0 not in final.disconnected

    # Next hand: the seat starts again with no timeouts; two more put it in auto-play,
    # and the player's Resume ends it (an operator may not press it for them).
    second = await suite.table.StartHand(table_pb2.StartHandRequest(table_id=table.table_id))
    stream = suite.table.WatchHand(
        table_pb2.WatchHandRequest(hand_id=second.hand_id, seat=0), timeout=HAND_TIMEOUT
    )
    resume = table_pb2.ResumeRequest(hand_id=second.hand_id, seat=0)
    seen: list[str] = []
    async for update in stream:
        if update.HasField("event"):
            seen.append(update.event.type)
        if update.event.type == "auto_play_started" and "auto_play_ended" not in seen:
            with pytest.raises(grpc.aio.AioRpcError) as denied:
                await suite.table.Resume(resume)
            assert denied.value.code() is grpc.StatusCode.PERMISSION_DENIED
            resumed = await suite.player("human-0").Resume(resume)
            assert 0 not in resumed.outcome.view.auto_play
    assert seen.count("auto_play_started") >= 1 and "auto_play_ended" in seen
    assert seen.index("auto_play_ended") > seen.index("auto_play_started")
    assert "player_disconnected" not in seen


async def expect_error(call: Any, code: grpc.StatusCode, reason: str | None) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() is code, caught.value.details()
    assert error_reason(caught.value) == reason


async def test_bad_input_gets_a_clear_status_and_reason(suite: Suite) -> None:
    """Unknown ids, malformed cards, out-of-turn moves, a deal over a hand in play and
    an oversized request each get their status and reason; the service keeps serving."""
    stub = suite.table
    table = await open_table(suite, "classic", humans=(0, 1, 2))  # nobody plays by itself
    started = await stub.StartHand(table_pb2.StartHandRequest(table_id=table.table_id))
    hand_id = started.hand_id
    view = (await stub.GetView(table_pb2.GetViewRequest(hand_id=hand_id, seat=0))).view
    not_on_turn = (view.turn + 1) % 3
    invalid, missing = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND
    refused = grpc.StatusCode.FAILED_PRECONDITION

    def play(cards: str) -> Any:
        return stub.Play(table_pb2.PlayRequest(hand_id=hand_id, seat=view.turn, cards=cards))

    await expect_error(play("33Z"), invalid, "MALFORMED_CARDS")
    await expect_error(play(""), invalid, "MALFORMED_CARDS")
    await expect_error(stub.Pass(table_pb2.PassRequest(hand_id=hand_id, seat=7)),
                       invalid, "UNKNOWN_SEAT")  # fmt: skip
    await expect_error(stub.GetView(table_pb2.GetViewRequest(hand_id="nope", seat=0)),
                       missing, "UNKNOWN_HAND")  # fmt: skip
    await expect_error(stub.GetView(table_pb2.GetViewRequest(hand_id="no.such", seat=0)),
                       invalid, "UNKNOWN_HAND")  # fmt: skip
    await expect_error(stub.StartHand(table_pb2.StartHandRequest(table_id="nope")),
                       missing, "UNKNOWN_TABLE")  # fmt: skip
    await expect_error(stub.Bid(table_pb2.BidRequest(hand_id=hand_id, seat=not_on_turn,
                                                     action=hand_events_pb2.BID_ACTION_PASS)),
                       refused, "NOT_YOUR_TURN")  # fmt: skip
    await expect_error(stub.Bid(table_pb2.BidRequest(hand_id=hand_id, seat=view.turn)),
                       invalid, "INVALID_ARGUMENT")  # fmt: skip
    await expect_error(play("3"), refused, "WRONG_PHASE")
    await expect_error(stub.StartHand(table_pb2.StartHandRequest(table_id=table.table_id)),
                       refused, "WRONG_PHASE")  # fmt: skip
    two_seats = [table_pb2.SeatSpec(player_id=f"p{i}") for i in range(2)]
    await expect_error(stub.OpenTable(table_pb2.OpenTableRequest(variant="classic",
                                                                 seats=two_seats)),
                       invalid, "INVALID_ARGUMENT")  # fmt: skip
    three = [table_pb2.SeatSpec(player_id=f"p{i}") for i in range(3)]
    await expect_error(stub.OpenTable(table_pb2.OpenTableRequest(variant="chess", seats=three)),
                       invalid, "INVALID_ARGUMENT")  # fmt: skip
    huge = "3" * (suite.settings.rpc.max_message_bytes + 1)
    tls = grpc.ssl_channel_credentials(suite.settings.tls.tls_ca_path.read_bytes())
    no_client_cap = grpc.aio.secure_channel(suite.settings.network.address("table"), tls)
    async with no_client_cap as unlimited:
        raw = table_pb2_grpc.TableServiceStub(unlimited)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await raw.Play(table_pb2.PlayRequest(hand_id=hand_id, seat=view.turn, cards=huge),
                           timeout=10)  # fmt: skip
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED

    again = (await stub.GetView(table_pb2.GetViewRequest(hand_id=hand_id, seat=0))).view
    assert again.phase == BIDDING and again.turn == view.turn  # refusals changed nothing
    assert list(again.cards) == list(view.cards)


async def test_the_first_bidder_rotates_from_hand_to_hand(suite: Suite) -> None:
    """§2: the golden card's receiver bids first in a table's first hand; then the first
    bidder moves one seat in play order each hand."""
    table = await open_table(suite, "classic", humans=())
    first_bidders: list[int] = []
    asked: list[int | None] = []
    for _ in range(3):
        started = await suite.table.StartHand(table_pb2.StartHandRequest(table_id=table.table_id))
        asked.append(started.first_bidder if started.HasField("first_bidder") else None)
        stream = suite.table.WatchHand(
            table_pb2.WatchHandRequest(hand_id=started.hand_id, seat=0, events_only=True),
            timeout=HAND_TIMEOUT,
        )
        updates = [u async for u in stream]
        final = updates[-1].view
        assert final.phase == ENDED
        assert all(not u.HasField("view") for u in updates[:-1])  # events_only
        first_bidders.append(final.first_bidder)
        if asked[-1] is None:
            assert final.first_bidder == final.golden_receiver
    assert asked[0] is None
    assert asked[1] == (first_bidders[0] + 1) % 3
    assert asked[2] == (first_bidders[1] + 1) % 3
    got = await suite.table.GetTable(table_pb2.GetTableRequest(table_id=table.table_id))
    assert len(got.table.hand_ids) == 3 and got.table.current_hand_id == ""


async def test_a_stream_resumes_after_the_last_position_seen(suite: Suite) -> None:
    """A client that comes back with the last position it saw gets everything after it,
    nothing missed and nothing twice (resumption; positions are versions)."""
    table = await open_table(suite, "laizi", humans=())
    started = await suite.table.StartHand(table_pb2.StartHandRequest(table_id=table.table_id))

    async def watch(after: int) -> list[table_pb2.WatchHandResponse]:
        stream = suite.table.WatchHand(
            table_pb2.WatchHandRequest(hand_id=started.hand_id, seat=1, after_position=after),
            timeout=HAND_TIMEOUT,
        )
        return [update async for update in stream]

    whole = await watch(0)
    cut = len(whole) // 2
    resumed = await watch(cut)
    assert [u.position for u in resumed] == list(range(cut + 1, len(whole) + 1))
    assert [u.SerializeToString() for u in resumed] == [u.SerializeToString() for u in whole[cut:]]
    assert await watch(len(whole)) == []
