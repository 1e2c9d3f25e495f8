"""Disconnects and escapes (RULES.md §10.2, §10.3, §11) through the table
service, as players live them: a stream that drops in the middle of a hand disconnects
the seat and the bot plays it (托管) until the player comes back on a resumed stream;
the first to go is the hand's escapee (§10.2); leaving a bean-room hand, also before
its first play, ends it with the escape penalty (§10.3). The expected ledgers are
worked out here from RULES.md's text, not by the settlement code; ``ddz audit`` then
checks the recorded hands.
"""

from __future__ import annotations

import asyncio
import math
import re
from fractions import Fraction
from typing import Any

import grpc
import pytest
from ddz.adapters.messaging.bus import EventBus
from ddz.domain.cards import Rank
from ddz.domain.hand import HandState
from ddz.domain.hand.events import PlayerDisconnected
from ddz.v1 import settlement_pb2, table_pb2
from suite_kit import Suite
from table_kit import (
    PLAYING,
    Watcher,
    ddz_audit,
    drive,
    event_of,
    hint,
    join,
    settled_ledger,
    stored,
    true_states,
    typed,
)

SIDE_LANDLORD, SIDE_FARMERS = 1, 2  # ddz.v1.Side


def events(watcher: Watcher) -> list[Any]:
    return [e for e in (event_of(u) for u in watcher.updates) if e is not None]


# --- §10.2 by hand ---------------------------------------------------------------------------


def ct_ledger(
    landlord: int, landlord_won: bool, escapee: int | None, bm: int,
    *, rake: Fraction, cap: int, penalty: int,
) -> tuple[list[int], int]:  # fmt: skip
    """RULES.md §10.2: cap first (the landlord's side moves at most the cap, each farmer
    half), then the rake on each winner's capped gain rounded down, then the escape
    penalty to the system; the four escape cases as listed there."""
    unit = bm if 2 * bm <= cap else cap // 2
    farmers = [s for s in range(3) if s != landlord]
    deltas = [0, 0, 0]
    system = 0
    if landlord_won:
        gain = 2 * unit
        taken = math.floor(gain * rake)
        deltas[landlord] = gain - taken
        system += taken
        if escapee is not None and escapee != landlord:  # a farmer escaped
            deltas[escapee] = -2 * unit  # the other farmer 0
        else:
            for farmer in farmers:
                deltas[farmer] = -unit
    else:
        deltas[landlord] = -2 * unit
        for farmer in farmers:
            taken = math.floor(unit * rake)
            deltas[farmer] = unit - taken
            system += taken
    if escapee is not None:
        deltas[escapee] -= penalty
        system += penalty
    return deltas, system


def steer(stub: Any, hand_id: str, seat: int, landlord_wins: bool) -> Any:
    """A player on the side meant to lose passes whenever the rules let them; everyone
    else plays the hint. With the landlord leading the first trick, this decides the
    winner in practice (the test checks it afterwards either way)."""

    async def choose(view: Any) -> Any:
        if view.phase == PLAYING and view.can_pass:
            losing = (seat != view.landlord) if landlord_wins else (seat == view.landlord)
            if losing:
                return table_pb2.SuggestedMove(**{"pass": {}})
        return await hint(stub, hand_id, seat)

    return choose


async def test_ct_escapes_settle_by_the_four_cases_of_section_10_2(suite: Suite) -> None:
    """§10.2: three people at a ct table. In each hand one of them (the landlord or a
    farmer) drops right after the landlord is chosen and comes back on a resumed
    stream: the first to go stays the escapee. Hands are steered so both sides win with
    both kinds of escapee; every ledger is the one RULES.md gives."""
    names = ("xia", "yan", "zhu")
    audited_hands: list[tuple[str, int]] = []
    joined = await asyncio.gather(*(join(suite.player(n), "ct") for n in names))
    table_id = joined[0].table.table_id
    assert {j.table.table_id for j in joined} == {table_id}
    stubs = {j.seat: suite.table_as(j.token) for j in joined}
    hand_id = joined[0].hand_id
    room = joined[0].table.room
    rake = Fraction(room.rake.numerator, room.rake.denominator)
    wanted = {(True, True), (True, False), (False, True), (False, False)}  # (ll escapes, ll wins)
    seen: set[tuple[bool, bool]] = set()
    for number in range(8):
        landlord_escapes, landlord_wins = sorted(wanted - seen)[0]
        watchers = {s: Watcher(stub, hand_id, s).start() for s, stub in stubs.items()}
        playing = [
            asyncio.create_task(drive(stubs[s], w, choose=steer(stubs[s], hand_id, s,
                                                                  landlord_wins)))
            for s, w in watchers.items()
        ]  # fmt: skip
        chosen = await watchers[0].until(lambda u: typed(u, "landlord_chosen"))
        landlord = event_of(chosen).seat
        escapee = landlord if landlord_escapes else (landlord + 1) % 3
        other = (escapee + 1) % 3
        dropping = [escapee, other] if number == 0 else [escapee]  # once: two disconnect
        for seat in dropping:
            await watchers[seat].drop()
            await watchers[(seat + 2) % 3].until(
                lambda u, seat=seat: typed(u, "player_disconnected") and event_of(u).seat == seat
            )
            watchers[seat].start()  # back, from the last position seen
        ends = await asyncio.wait_for(asyncio.gather(*playing), 60)
        final = ends[0]
        for seat, watcher in watchers.items():
            positions = [u.position for u in watcher.updates]
            assert positions == list(range(1, final.version + 1)), f"seat {seat}: gap or repeat"
        gone = [e for e in events(watchers[other]) if isinstance(e, PlayerDisconnected)]
        assert [(e.seat, e.escapee) for e in gone] == [(s, s == escapee) for s in dropping]
        won = final.winner == SIDE_LANDLORD
        deltas, system = ct_ledger(
            final.landlord, won, escapee, final.base * final.multiplier_total,
            rake=rake, cap=room.cap, penalty=room.escape_penalty * room.initial_multiplier,
        )  # fmt: skip
        assert list(final.ledger.deltas) == deltas, (landlord_escapes, won, final.ledger)
        assert final.ledger.system == system
        recorded = await settled_ledger(suite, hand_id)
        assert list(recorded.ledger.deltas) == deltas
        seen.add((landlord_escapes, won))
        if number == 0:
            audited_hands.append((hand_id, final.version))
        if seen == wanted:
            break
        nexts = await asyncio.gather(*(
            stub.NextHand(table_pb2.NextHandRequest(table_id=table_id), timeout=30)
            for stub in stubs.values()
        ))  # fmt: skip
        hand_id = nexts[0].hand_id
    assert seen == wanted, f"cases met: {sorted(seen)}"
    # The first hand (two disconnects, one escapee) through `ddz audit`.
    first_hand, version = audited_hands[0]
    await stored(suite, first_hand, version)
    audited = ddz_audit(suite, first_hand)
    assert audited.returncode == 0, audited.stdout[-2000:] + audited.stderr
    assert "escape_penalty" in audited.stdout


async def test_a_dropped_player_is_played_by_the_bot_and_takes_the_seat_back(
    suite: Suite, bus: EventBus
) -> None:
    """§10.2 (classic settles as §10.1, no penalty): Ann's stream drops in the middle of
    the play; the bot moves for her seat; she resumes from the last position she saw,
    gets everything after it exactly once, plays on herself, and the hand settles.
    ``ddz audit`` checks the recorded hand, disconnect and reconnect included."""
    ann = await join(suite.player("ann"), "classic")
    hand_id, seat = ann.hand_id, ann.seat
    stub = suite.table_as(ann.token)
    operator = Watcher(suite.operator(), hand_id, seat).start()  # what happened, by position
    watcher = Watcher(stub, hand_id, seat).start()
    mine: list[Any] = []
    playing = asyncio.create_task(drive(stub, watcher, outcomes=mine))
    await watcher.until(lambda u: u.view.phase == PLAYING)
    await watcher.drop()
    seen_before = len(watcher.updates)
    away = await operator.until(lambda u: typed(u, "player_disconnected"))
    # The bot plays her seat while she is away.
    await operator.until(
        lambda u: (
            u.position > away.position
            and (typed(u, "play_made") or typed(u, "passed"))
            and event_of(u).seat == seat
        )
    )
    moves_before = len(mine)
    watcher.start()
    back = await operator.until(lambda u: typed(u, "player_reconnected"))
    final = await asyncio.wait_for(playing, 60)
    assert len(watcher.segments) == 2 and watcher.segments[1][0].position == seen_before + 1
    assert [u.position for u in watcher.updates] == list(range(1, final.version + 1))
    assert len(mine) > moves_before, "she did not play on after coming back"
    assert back.position > away.position
    # Resumed or not, the seat's stream is the same, message for message.
    fresh = Watcher(stub, hand_id, seat)
    fresh.start()
    whole = await fresh.finished()
    assert [u.SerializeToString() for u in whole] == [
        u.SerializeToString() for u in watcher.updates
    ]
    # §10.1: no escape penalty in classic; landlord ±2·bm, farmers ∓bm.
    bm = final.base * final.multiplier_total
    sign = 1 if final.winner == SIDE_LANDLORD else -1
    expected = [sign * (2 * bm if s == final.landlord else -bm) for s in range(3)]
    assert list(final.ledger.deltas) == expected and final.ledger.system == 0
    await stored(suite, hand_id, final.version)
    audited = ddz_audit(suite, hand_id)
    assert audited.returncode == 0, audited.stdout[-2000:] + audited.stderr
    assert re.search(rf"seat {seat} ann disconnected; the bot plays \(first", audited.stdout)
    assert re.search(rf"seat {seat} ann reconnected", audited.stdout)
    states = await true_states(suite, hand_id)
    assert states[final.version].escapee == seat


# --- §10.3 by hand ---------------------------------------------------------------------------


def bombs_held(state: HandState) -> int:
    """Bombs in the hands at the escape (laizi, §10.3): four cards of a rank (a hard
    bomb, or the wildcard rank's pure bomb: ×4 either way, §9) and the rocket."""
    found = 0
    for counts in state.counts:
        found += sum(1 for rank in range(Rank.TWO + 1) if counts[rank] == 4)
        found += counts[Rank.BLACK_JOKER] == 1 and counts[Rank.RED_JOKER] == 1
    return found


def bean_escape_ledger(
    escapee: int, landlord: int, multiplier_at_escape: int, initial: int,
    *, coefficient: int, fee: int, balances: list[int],
) -> tuple[list[int], int]:  # fmt: skip
    """RULES.md §10.3 escape in a wildcard room: the multiplier without the initial one
    below 10 pays as if at 20× (landlord) / 10× (farmer), else 4× / 2× the actual;
    X = base 1 × multiplier × role coefficient × 0.25 (at most 10000), × N; the two
    others share it 2:1 (landlord:farmer) or 1:1, rounded down, the rest to the system;
    everyone pays the fee A."""
    played = multiplier_at_escape // initial
    is_landlord = escapee == landlord
    floor_, scale = (20, 4) if is_landlord else (10, 2)
    multiplier = initial * floor_ if played < 10 else initial * played * scale
    x = min(Fraction(multiplier * (2 if is_landlord else 1)) / 4, Fraction(10000))
    penalty = math.floor(x * coefficient)
    paid = min(penalty, balances[escapee] - fee)
    weights = {s: (2 if s == landlord else 1) for s in range(3) if s != escapee}
    total = sum(weights.values())
    shares = {s: paid * w // total for s, w in weights.items()}
    deltas = [0, 0, 0]
    deltas[escapee] = -paid - fee
    for s, share in shares.items():
        deltas[s] = share - fee
    return deltas, 3 * fee + paid - sum(shares.values())


async def test_bean_escapes_settle_by_section_10_3(suite: Suite, bus: EventBus) -> None:
    """§11/§10.3 in a laizi room (N 100, A 10, initial ×2, opening balance 10000): Ann
    leaves while the hand is still being bid (before its first play: an escape; the
    landlord is not known, so she settles as a farmer and the next seat takes the
    landlord's share); then at another table the landlord leaves right after being
    chosen. Each hand ends at once with the ledger RULES.md gives."""
    room_settings = dict(coefficient=100, fee=10)
    # 1. Before anyone has bid.
    first = await asyncio.gather(*(join(suite.player(n), "laizi") for n in ("ann", "ben", "cai")))
    ann, hand_id = first[0], first[0].hand_id
    ben_stub = suite.table_as(first[1].token)
    watcher = Watcher(ben_stub, hand_id, first[1].seat).start()
    await watcher.until(lambda u: u.view.phase != 0 and len(u.view.cards) > 0)
    before = await true_states(suite, hand_id)
    state = before[max(before)]
    left = await suite.table_as(ann.token).LeaveRoom(table_pb2.LeaveRoomRequest(room_id="laizi"))
    assert left.escaped_hand_id == hand_id
    final = (await watcher.finished())[-1].view
    assert final.winner == 0 and final.seed  # no winner: the escape ended the hand
    at_escape = state.multiplier.total * 4 ** bombs_held(state)
    escaped = next(e for e in events(watcher) if type(e).__name__ == "PlayerEscaped")
    assert escaped.seat == ann.seat and escaped.escape_multiplier.total == at_escape
    deltas, system = bean_escape_ledger(
        ann.seat, (ann.seat + 1) % 3, at_escape, 2, balances=[10000] * 3, **room_settings
    )
    assert list(final.ledger.deltas) == deltas and final.ledger.system == system
    await settled_ledger(suite, hand_id)
    balance = await suite.settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id="ann"))
    assert balance.balance == deltas[ann.seat]
    again = await join(suite.player("ann"), "laizi")  # her balance now counts the penalty
    assert again.balance == 10000 + deltas[ann.seat]
    await suite.table_as(again.token).LeaveRoom(table_pb2.LeaveRoomRequest())
    await stored(suite, hand_id, final.version)
    audited = ddz_audit(suite, hand_id)
    assert audited.returncode == 0, audited.stdout[-2000:] + audited.stderr
    assert re.search(rf"seat {ann.seat} ann left the hand \(escape\)", audited.stdout)

    # 2. The landlord leaves once chosen, before the first play.
    trio = await asyncio.gather(*(join(suite.player(n), "laizi") for n in ("dai", "eli", "fan")))
    hand_id = trio[0].hand_id
    stubs = {j.seat: suite.table_as(j.token) for j in trio}
    chosen = asyncio.Event()

    def bid_only(seat: int) -> Any:
        async def choose(view: Any) -> Any:
            if view.phase == PLAYING:
                chosen.set()
                await asyncio.Event().wait()  # the landlord never plays: they leave
            return await hint(stubs[seat], hand_id, seat)

        return choose

    watchers = {s: Watcher(stub, hand_id, s).start() for s, stub in stubs.items()}
    bidding = [
        asyncio.create_task(drive(stubs[s], w, choose=bid_only(s))) for s, w in watchers.items()
    ]
    await asyncio.wait_for(chosen.wait(), 60)
    # Another seat's view may reach the play first: wait for seat 0's own to get there.
    playing = await watchers[0].until(lambda u: u.HasField("view") and u.view.phase == PLAYING)
    landlord = playing.view.landlord
    states = await true_states(suite, hand_id)
    state = states[max(states)]
    assert state.landlord == landlord and state.plays_made == (0, 0, 0)
    balances = [10000 + 0] * 3
    await stubs[landlord].LeaveRoom(table_pb2.LeaveRoomRequest())
    farmer = (landlord + 1) % 3
    final = (await watchers[farmer].finished())[-1].view
    for task in bidding:
        task.cancel()
    await asyncio.gather(*bidding, return_exceptions=True)
    at_escape = state.multiplier.total * 4 ** bombs_held(state)
    deltas, system = bean_escape_ledger(
        landlord, landlord, at_escape, 2, balances=balances, **room_settings
    )
    assert list(final.ledger.deltas) == deltas and final.ledger.system == system
    recorded = await settled_ledger(suite, hand_id)
    assert list(recorded.ledger.deltas) == deltas
    with pytest.raises(grpc.aio.AioRpcError):  # the table is closed: no next hand
        await stubs[farmer].NextHand(table_pb2.NextHandRequest(table_id=trio[0].table.table_id))
