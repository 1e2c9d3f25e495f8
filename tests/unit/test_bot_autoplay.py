"""The bot service's choices, without the network: which seat it plays, when a deal is
complete enough to bid on, the move it falls back to, how hands are shared out, and the
latency counters it reports."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from ddz.application.hand_fold import deal_complete
from ddz.domain.hand import (
    Disconnect,
    Hand,
    Phase,
    Rejection,
    SeatInfo,
    StartHand,
    replay,
    view_for,
)
from ddz.domain.players import GreedyPlayer
from ddz.domain.ruleset import CLASSIC, LAIZI, TIANDI, VARIANTS
from ddz.domain.settlement import RoomSettings

from services.bot.use_cases.autoplay import fallback_move, in_partition, seat_to_act
from services.bot.use_cases.stats import BOUNDS_US, MoveStats

SEATS = (SeatInfo("ann"), SeatInfo("bot-1", is_bot=True), SeatInfo("bot-2", is_bot=True))


def started(rules=CLASSIC, seed: int = 1, **options: object) -> Hand:
    hand = Hand()
    result = hand.execute(
        StartHand("h1", rules, RoomSettings(), SEATS, bytes([seed]) * 32, **options)  # type: ignore[arg-type]
    )
    assert not isinstance(result, Rejection)
    return hand


def test_the_bot_plays_bot_seats_and_disconnected_seats_only() -> None:
    for seed in range(1, 12):
        hand = started(seed=seed)
        turn = hand.state.turn
        if turn == 0:
            assert seat_to_act(hand.state) is None  # a person's turn
            hand.execute(Disconnect(0))
            assert seat_to_act(hand.state) == 0  # 托管 (§10.2)
        else:
            assert seat_to_act(hand.state) == turn


def test_nobody_is_played_before_the_deal_is_complete() -> None:
    """§5: tiandi's heaven wildcard is drawn before bidding; §6: hands shown before the
    deal. A bid on a deal still being published would race the dealer."""
    hand = started(TIANDI)
    events = hand.events
    assert [type(e).__name__ for e in events[:3]] == ["HandStarted", "CardsDealt", "WildcardDrawn"]
    partial = replay(events[:2])
    assert partial.phase is Phase.BIDDING and partial.turn >= 0
    assert not deal_complete(partial)
    assert seat_to_act(replace(partial, seats=(SEATS[1],) * 3)) is None
    assert deal_complete(replay(events))

    shown = started(LAIZI, show_before_deal=frozenset({2}))
    assert not deal_complete(replay(shown.events[:2]))
    assert deal_complete(shown.state)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_fallback_move_is_always_accepted(variant: str) -> None:
    """Whatever the position, the fallback (pass, or the first legal play when leading)
    is a move the rules accept: the bot can always get a hand unstuck. (Its moves are
    the bot's: seat 0's person is away, so the bot plays every seat.)"""
    rng = random.Random(variant)
    player = GreedyPlayer(rng)
    for seed in range(1, 6):
        hand = started(VARIANTS[variant], seed=seed)
        assert not isinstance(hand.execute(Disconnect(0)), Rejection)
        steps = 0
        while hand.state.phase is not Phase.ENDED and steps < 400:
            view = view_for(hand.state, hand.state.turn)
            command = fallback_move(view) if rng.random() < 0.5 else player.act(view)
            assert not isinstance(hand.execute(command), Rejection), command
            steps += 1
        assert hand.state.phase is Phase.ENDED


def test_hands_are_shared_out_between_partitions_exactly_once() -> None:
    ids = [f"{i:032x}" for i in range(3000)]
    owners = [[p for p in range(3) if in_partition(h, p, 3)] for h in ids]
    assert all(len(o) == 1 for o in owners)
    counts = [sum(o == [p] for o in owners) for p in range(3)]
    assert min(counts) > 800  # roughly even
    assert all(in_partition(h, 0, 1) for h in ids[:10])


def test_latency_histogram_buckets() -> None:
    stats = MoveStats()
    for ms in (0.5, 1.0, 2.0, 40.0):
        stats.record_latency(ms / 1000)
    reply = stats.to_pb(hands_in_play=2)
    assert sum(b.count for b in reply.latency) == 4
    for bucket, ms in zip(reply.latency, (0.5, 1.0, 2.0, 40.0), strict=True):
        assert bucket.le_us >= ms * 1000 > bucket.le_us / 1.11  # within one 10% bucket
    assert list(BOUNDS_US) == sorted(set(BOUNDS_US))
