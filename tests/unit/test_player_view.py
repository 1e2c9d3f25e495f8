"""A seat's view holds no other seat's hidden cards, in every variant,
during bidding, show cards and play; and it holds everything public."""

from __future__ import annotations

import dataclasses
import random

import pytest
from ddz.domain.hand import (
    Disconnect,
    Hand,
    HandState,
    Phase,
    PlayerView,
    Rejection,
    SeatInfo,
    ShowCards,
    StartHand,
    view_for,
)
from ddz.domain.hand.events import BidMade, CardsDealt, MoveBy, PlayMade, Redealt
from ddz.domain.players import RandomPlayer
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI
from ddz.domain.settlement import RoomSettings
from hand_kit import bids, cards_in, hidden_from, ok, rigged, start


def check_views(state: HandState) -> None:
    if state.phase is Phase.ENDED:
        return  # the cards left are shown to all at the end (HandEnded), and the seed too
    for seat in range(3):
        view = view_for(state, seat)
        # A shown hand of an earlier deal round (before a re-deal) says nothing about
        # this round's deal: only this round's events are checked.
        redeals = [i for i, e in enumerate(view.history) if isinstance(e, Redealt)]
        this_round = view.history[redeals[-1] :] if redeals else view.history
        visible = cards_in(dataclasses.replace(view, history=this_round))
        leaked = visible & hidden_from(state, seat)
        assert not leaked, f"seat {seat} sees {sorted(map(str, leaked))} in {state.phase}"
        assert view.cards == state.cards[seat]


@pytest.mark.parametrize("rules", [CLASSIC, CT, LAIZI, TIANDI], ids=lambda r: r.name)
def test_no_view_ever_holds_another_seats_hidden_cards(rules) -> None:
    """Random hands with shows and disconnects; every view after every event."""
    for i in range(6):
        rng = random.Random(i)
        players = [RandomPlayer(rng, show_rate=0.2) for _ in range(3)]
        hand = Hand()
        start = StartHand(
            f"v{i}",
            rules,
            RoomSettings(),
            (SeatInfo("a"), SeatInfo("b"), SeatInfo("c")),
            bytes([i]) * 32,
        )
        hand.execute(start)
        check_views(hand.state)
        while hand.state.phase is not Phase.ENDED:
            if rng.random() < 0.02:
                hand.execute(Disconnect(rng.randrange(3)))  # may be refused: fine
            seat = hand.state.turn
            result = hand.execute(players[seat].act(view_for(hand.state, seat)))
            assert not isinstance(result, Rejection), result
            check_views(hand.state)


def test_the_view_has_no_field_for_other_hands() -> None:
    names = {f.name for f in dataclasses.fields(PlayerView)}
    assert names.isdisjoint({"hands", "all_cards", "state", "deal", "seed"})
    assert not any(isinstance(e, CardsDealt) for e in view_for(start(CT).state, 0).history)


def test_view_for_fills_every_field() -> None:
    """``view_for`` builds the view without __init__: it must set exactly the fields."""
    view = view_for(start(LAIZI).state, 1)
    assert set(vars(view)) == {f.name for f in dataclasses.fields(PlayerView)}


def test_the_view_shows_everything_public_during_bidding() -> None:
    h = start(CT, first_bidder=0)
    bids(h, 1)
    view = view_for(h.state, 2)
    assert view.card_counts == (26, 26, 26)
    assert view.bids == (BidMade(0, view.bids[0].action, 1, MoveBy.PLAYER),)
    assert view.turn == 1 and not view.my_turn and view.legal_bids() == []
    assert view_for(h.state, 1).legal_bids()[0].score == 0  # pass, then 2, 3
    assert [b.score for b in view_for(h.state, 1).legal_bids()] == [0, 2, 3]
    assert view.bottom is None and view.landlord is None


def test_shown_hand_is_public_in_every_view_section_6() -> None:
    h = start(TIANDI, first_bidder=0)
    ok(h, ShowCards(2))
    for seat in range(3):
        assert view_for(h.state, seat).shown[2] == h.state.cards[2]
        assert view_for(h.state, seat).shown[0] is None


def test_the_view_during_play() -> None:
    h = rigged(CT, ["3456", "KK", "AA"], "789T", landlord=0, bomb_limits=(None, 1, 1))
    ok(h, view_play(h, 0))
    view = view_for(h.state, 1)
    assert view.trick is not None and view.trick.seat == 0
    assert view.card_counts == (7, 2, 2)  # 4 + 4 bottom cards - 1 played
    assert view.bottom == h.state.bottom and view.landlord == 0
    assert view.can_pass and view.bombs_left == (None, 1, 1)
    assert isinstance(view.history[-1], PlayMade)
    assert [m.cards for m in view.legal_moves()] == [(0,) * 10 + (1, 0, 0, 0, 0)]  # K


def view_play(h: Hand, seat: int):
    from ddz.domain.players import play_of

    moves = view_for(h.state, seat).legal_moves()
    lowest = min(moves, key=lambda m: (m.reading.size, m.reading.main))
    return play_of(seat, lowest)
