"""The deal (RULES.md §1, §2, §5 heaven draw) and the start of a hand."""

from __future__ import annotations

import hashlib

import ddz
import pytest
from ddz.domain.hand import (
    Hand,
    HandState,
    Phase,
    RejectReason,
    StartHand,
    next_first_bidder,
    replay,
    view_for,
)
from ddz.domain.hand.events import CardsDealt, HandStarted, WildcardDrawn
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, WildcardDraw
from ddz.domain.settlement import RoomSettings
from ddz.domain.shuffle import canonical_deck, deal, draw_wildcard, master_seed
from hand_kit import SEATS, SEED, of_type, refused, start

VARIANTS = [CLASSIC, CT, LAIZI, TIANDI]


@pytest.mark.parametrize(
    ("rules", "hand", "bottom"), [(CLASSIC, 17, 3), (CT, 26, 4), (LAIZI, 17, 3), (TIANDI, 17, 3)]
)
def test_deal_sizes_section_1(rules, hand, bottom) -> None:
    """§1: 17/17/17 + 3 bottom cards; ct 26/26/26 + 4, from one whole deck."""
    h = start(rules)
    dealt = of_type(h.events, CardsDealt)[0]
    assert [len(cards) for cards in dealt.hands] == [hand, hand, hand]
    assert len(dealt.bottom) == bottom
    every = sorted(c for cards in (*dealt.hands, dealt.bottom) for c in cards)
    assert every == sorted(canonical_deck(rules))
    assert [h.state.card_count(s) for s in range(3)] == [hand] * 3


@pytest.mark.parametrize("rules", VARIANTS, ids=lambda r: r.name)
def test_the_deal_is_re_derivable_from_the_seed_issue_5(rules) -> None:
    """HandStarted commits to sha256(seed); the deal is ddz-shuffle-v1 of that seed."""
    h = start(rules, client_seeds=(b"c1", b"c2"))
    started, dealt = h.events[0], h.events[1]
    assert isinstance(started, HandStarted) and isinstance(dealt, CardsDealt)
    assert started.commitment == hashlib.sha256(SEED).hexdigest()
    assert started.algorithm == "ddz-shuffle-v1"
    assert started.engine_version == ddz.ENGINE_VERSION
    assert started.rules == rules and started.seats == SEATS
    assert started.client_seeds == (b"c1".hex(), b"c2".hex())
    expected = deal(rules, master_seed(SEED, [b"c1", b"c2"]), 0)
    assert dealt.hands == expected.hands and dealt.bottom == expected.bottom
    assert dealt.golden_card == expected.golden_card


def test_golden_card_receiver_bids_first_section_2() -> None:
    """§2: with no first bidder given, the golden card's receiver bids first."""
    for i in range(10):
        seed = bytes([i]) * 32
        h = start(CT, seed=seed)
        dealt = of_type(h.events, CardsDealt)[0]
        assert dealt.golden_card in dealt.hands[dealt.golden_receiver]
        assert dealt.first_bidder == dealt.golden_receiver == h.state.turn
        assert h.state.golden_card == dealt.golden_card


def test_given_first_bidder_bids_first_section_2() -> None:
    """§2: in later hands at a table the first bidder is the table's (rotated) seat."""
    for seat in range(3):
        h = start(CLASSIC, first_bidder=seat)
        assert h.state.first_bidder == seat == h.state.turn


def test_first_bidder_rotates_in_play_order_section_2() -> None:
    assert [next_first_bidder(s) for s in range(3)] == [1, 2, 0]


def test_golden_card_is_public_and_bottom_hidden_section_1_2() -> None:
    h = start(CLASSIC)
    for seat in range(3):
        view = view_for(h.state, seat)
        assert view.golden_card == h.state.golden_card
        assert view.bottom is None


def test_tiandi_heaven_drawn_before_bidding_section_5() -> None:
    h = start(TIANDI)
    assert [type(e) for e in h.events] == [HandStarted, CardsDealt, WildcardDrawn]
    drawn = h.events[2]
    assert drawn.when is WildcardDraw.BEFORE_BIDDING and drawn.index == 0
    assert drawn.rank == draw_wildcard(master_seed(SEED), 0, 0)
    assert h.state.wild == (drawn.rank,)
    assert all(view_for(h.state, s).wild == (drawn.rank,) for s in range(3))


def test_laizi_draws_nothing_before_bidding_section_5() -> None:
    h = start(LAIZI)
    assert not of_type(h.events, WildcardDrawn) and h.state.wild == ()


def test_same_start_same_events() -> None:
    assert start(LAIZI).events == start(LAIZI).events
    assert start(LAIZI).events != start(LAIZI, seed=b"\x01" * 32).events


def test_only_the_deal_is_hidden() -> None:
    """CardsDealt holds every seat's cards: it is the one hidden event."""
    h = start(CLASSIC)
    assert [type(e).HIDDEN for e in h.events] == [False, True]
    assert h.state.log == (h.events[0],)


def test_replay_rebuilds_the_started_state() -> None:
    h = start(TIANDI)
    assert replay(h.events) == h.state


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"seed": b"short"}, RejectReason.INVALID_COMMAND),
        ({"first_bidder": 3}, RejectReason.UNKNOWN_SEAT),
        ({"show_before_deal": frozenset({0})}, RejectReason.NOT_ALLOWED),  # classic: §6
        ({"show_before_deal": frozenset({7})}, RejectReason.UNKNOWN_SEAT),
        ({"balances": (1, -1, 0)}, RejectReason.INVALID_COMMAND),
    ],
)
def test_bad_starts_are_rejected(change, code) -> None:
    fields = {"seed": SEED, "first_bidder": None, "show_before_deal": frozenset()} | change
    command = StartHand("h", CLASSIC, RoomSettings(), SEATS, **fields)
    assert refused(Hand(), command) is code


def test_starting_twice_is_wrong_phase() -> None:
    h = start(CLASSIC)
    again = StartHand("h", CLASSIC, RoomSettings(), SEATS, SEED)
    assert refused(h, again) is RejectReason.WRONG_PHASE


def test_before_start_the_state_is_empty() -> None:
    assert HandState().phase is Phase.NOT_STARTED and HandState().version == 0
