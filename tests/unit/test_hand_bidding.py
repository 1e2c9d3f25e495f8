"""Bidding (RULES.md §6), wildcard draws after it (§5), show cards (§6), bomb limits (§7)."""

from __future__ import annotations

import hashlib

import pytest
from ddz.domain.cards import card_counts
from ddz.domain.hand import Bid, BidAction, Pass, Phase, RejectReason, ShowCards, view_for
from ddz.domain.hand.events import (
    BidMade,
    CardsDealt,
    CardsShown,
    LandlordChosen,
    Redealt,
    WildcardDrawn,
)
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, WildcardDraw
from ddz.domain.shuffle import deal, draw_wildcard, master_seed, round_seed
from hand_kit import SEED, bids, of_type, ok, refused, start

# --- call score (classic, ct) -----------------------------------------------------------


def test_bids_go_in_turn_order_from_the_first_bidder_section_2_6() -> None:
    h = start(CLASSIC, first_bidder=1)
    assert refused(h, Bid.call(0, 1)) is RejectReason.NOT_YOUR_TURN
    ok(h, Bid.call(1, 1))
    assert h.state.turn == 2
    ok(h, Bid.pass_(2))
    assert h.state.turn == 0


def test_a_call_must_be_higher_section_6() -> None:
    h = start(CLASSIC, first_bidder=0)
    ok(h, Bid.call(0, 2))
    assert refused(h, Bid.call(1, 2)) is RejectReason.BID_NOT_HIGHER
    assert refused(h, Bid.call(1, 1)) is RejectReason.BID_NOT_HIGHER
    ok(h, Bid.call(1, 3))


@pytest.mark.parametrize(
    "bad", [Bid.call(0, 4), Bid.call(0, 0), Bid.grab(0), Bid(0, BidAction.PASS, 2)]
)
def test_call_score_accepts_only_pass_or_1_2_3_section_6(bad) -> None:
    h = start(CLASSIC, first_bidder=0)
    assert refused(h, bad) is RejectReason.INVALID_BID


def test_a_call_of_3_ends_bidding_at_once_section_6() -> None:
    h = start(CLASSIC, first_bidder=2)
    events = ok(h, Bid.call(2, 3))
    chosen = of_type(events, LandlordChosen)[0]
    assert (chosen.seat, chosen.base) == (2, 3)
    assert h.state.phase is Phase.PLAYING and h.state.landlord == 2 and h.state.turn == 2


def test_highest_caller_is_landlord_and_call_is_base_section_6() -> None:
    h = start(CLASSIC, first_bidder=0)
    events = bids(h, 1, 2, 0)
    chosen = of_type(events, LandlordChosen)[0]
    assert (chosen.seat, chosen.base) == (1, 2)
    assert h.state.base == 2


def test_landlord_takes_the_bottom_cards_and_they_are_shown_section_1() -> None:
    h = start(CLASSIC, first_bidder=0)
    bottom = h.state.bottom
    hand_before = h.state.cards[0]
    bids(h, 3)
    assert len(h.state.cards[0]) == 20
    assert set(h.state.cards[0]) == set(hand_before) | set(bottom)
    assert h.state.counts[0] == card_counts(h.state.cards[0])
    for seat in range(3):
        assert view_for(h.state, seat).bottom == bottom


def test_ct_all_pass_golden_card_holder_is_landlord_at_base_1_section_6() -> None:
    h = start(CT)
    holder = h.state.golden_receiver
    assert h.state.turn == holder
    events = bids(h, 0, 0, 0)
    chosen = of_type(events, LandlordChosen)[0]
    assert (chosen.seat, chosen.base) == (holder, 1)
    assert len(h.state.cards[holder]) == 30  # 26 + 4 bottom cards (§1)


def test_classic_all_pass_deals_again_with_an_audited_seed_section_6() -> None:
    h = start(CLASSIC, first_bidder=1)
    events = bids(h, 0, 0, 0)
    redealt = of_type(events, Redealt)[0]
    master = master_seed(SEED)
    assert redealt.round == 1
    assert redealt.commitment == hashlib.sha256(round_seed(master, 1)).hexdigest()
    dealt = of_type(events, CardsDealt)[0]
    again = deal(CLASSIC, master, 1)
    assert dealt.round == 1 and dealt.hands == again.hands and dealt.bottom == again.bottom
    assert h.state.phase is Phase.BIDDING and h.state.bids == () and h.state.round == 1
    assert h.state.turn == 1  # the table's first bidder bids first again
    assert h.state.cards == again.hands


# --- grab landlord (laizi, tiandi) --------------------------------------------------------


def _grab(h, *actions: str) -> list:
    out = []
    for action in actions:
        seat = h.state.turn
        command = {"call": Bid.call, "grab": Bid.grab, "pass": Bid.pass_}[action](seat)
        out += ok(h, command)
    return out


def _grabs(h) -> list[int]:
    return [f.factor for f in h.state.multiplier.factors if f.reason == "grab"]


def test_grab_first_caller_grabs_back_on_last_chance_section_6() -> None:
    h = start(LAIZI, first_bidder=0)
    events = _grab(h, "call", "grab", "pass")
    assert h.state.phase is Phase.BIDDING and h.state.turn == 0  # the first caller's last chance
    events += _grab(h, "grab")
    chosen = of_type(events, LandlordChosen)[0]
    assert (chosen.seat, chosen.base) == (0, 1)
    assert _grabs(h) == [2, 2]  # each grab x2 (§6, §9)
    assert h.state.multiplier.total == 4


def test_grab_first_caller_passes_last_chance_last_grabber_is_landlord_section_6() -> None:
    h = start(LAIZI, first_bidder=1)
    events = _grab(h, "call", "grab", "grab", "pass")
    assert of_type(events, LandlordChosen)[0].seat == 0  # seat 1 called, 2 and 0 grabbed
    assert _grabs(h) == [2, 2]


def test_grab_no_last_chance_when_nobody_grabbed_section_6() -> None:
    h = start(LAIZI, first_bidder=0)
    events = _grab(h, "call", "pass", "pass")
    assert of_type(events, LandlordChosen)[0].seat == 0 and _grabs(h) == []


def test_grab_last_seat_calls_and_is_landlord_section_6() -> None:
    h = start(TIANDI, first_bidder=0)
    events = _grab(h, "pass", "pass", "call")
    assert of_type(events, LandlordChosen)[0].seat == 2


def test_grab_nobody_calls_deals_again_section_6() -> None:
    h = start(LAIZI, first_bidder=0)
    events = _grab(h, "pass", "pass", "pass")
    assert of_type(events, Redealt)[0].round == 1
    assert of_type(events, CardsDealt)[0].round == 1
    assert h.state.phase is Phase.BIDDING and h.state.turn == 0


def test_grab_bids_must_fit_the_moment_section_6() -> None:
    h = start(LAIZI, first_bidder=0)
    assert refused(h, Bid.grab(0)) is RejectReason.INVALID_BID  # nothing to grab yet
    assert refused(h, Bid.call(0, 2)) is RejectReason.INVALID_BID  # no scores in grab
    ok(h, Bid.call(0))
    assert refused(h, Bid.call(1)) is RejectReason.INVALID_BID  # already called: grab or pass


def test_bidding_is_over_once_playing_wrong_phase() -> None:
    h = start(CLASSIC, first_bidder=0)
    bids(h, 3)
    assert refused(h, Bid.pass_(0)) is RejectReason.WRONG_PHASE
    assert refused(h, Pass(0)) is RejectReason.LEADER_CANNOT_PASS


def test_bid_from_unknown_seat() -> None:
    assert refused(start(CLASSIC), Bid.pass_(5)) is RejectReason.UNKNOWN_SEAT


# --- wildcard draws (§5) ------------------------------------------------------------------


def test_laizi_wildcard_drawn_after_the_landlord_is_known_section_5() -> None:
    h = start(LAIZI, first_bidder=0)
    events = _grab(h, "call", "pass", "pass")
    kinds = [type(e) for e in events]
    assert kinds == [BidMade, BidMade, BidMade, LandlordChosen, WildcardDrawn]
    drawn = events[-1]
    assert drawn.when is WildcardDraw.AFTER_LANDLORD
    assert drawn.rank == draw_wildcard(master_seed(SEED), 0, 0)
    assert h.state.wild == (drawn.rank,)


def test_tiandi_earth_after_landlord_differs_from_heaven_section_5() -> None:
    for i in range(8):
        h = start(TIANDI, seed=bytes([i + 1]) * 32, first_bidder=0)
        heaven = h.state.wild[0]
        events = _grab(h, "call", "pass", "pass")
        earth = of_type(events, WildcardDrawn)[0]
        assert earth.index == 1 and earth.rank != heaven
        assert earth.rank == draw_wildcard(master_seed(bytes([i + 1]) * 32), 0, 1, [heaven])
        assert h.state.wild == (heaven, earth.rank)


def test_a_redeal_draws_tiandis_heaven_again_section_5() -> None:
    h = start(TIANDI, first_bidder=0)
    events = _grab(h, "pass", "pass", "pass")
    drawn = of_type(events, WildcardDrawn)
    assert [d.when for d in drawn] == [WildcardDraw.BEFORE_BIDDING]
    assert drawn[0].rank == draw_wildcard(master_seed(SEED), 1, 0)
    assert h.state.wild == (drawn[0].rank,)


# --- show cards (§6) ----------------------------------------------------------------------


def _show_factors(h) -> list[int]:
    return [f.factor for f in h.state.multiplier.factors if f.reason == "show_cards"]


def test_show_cards_only_where_the_rules_have_it_section_6() -> None:
    assert refused(start(CLASSIC), ShowCards(0)) is RejectReason.NOT_ALLOWED
    assert refused(start(CT), ShowCards(0)) is RejectReason.NOT_ALLOWED


def test_show_after_the_deal_is_x2_and_makes_the_hand_public_section_6() -> None:
    h = start(LAIZI, first_bidder=0)
    events = ok(h, ShowCards(1))
    shown = of_type(events, CardsShown)[0]
    assert (shown.when, shown.factor) == ("after_deal", 2)
    assert shown.cards == h.state.cards[1]
    assert _show_factors(h) == [2]
    assert view_for(h.state, 0).shown[1] == h.state.cards[1]
    assert view_for(h.state, 2).shown[1] == h.state.cards[1]
    assert view_for(h.state, 0).shown[2] is None


def test_show_during_the_deal_x4_then_x3_by_cards_held_section_6() -> None:
    h = start(LAIZI, first_bidder=0)
    early = of_type(ok(h, ShowCards(0, cards_held=5)), CardsShown)[0]
    late = of_type(ok(h, ShowCards(1, cards_held=12)), CardsShown)[0]
    assert (early.when, early.factor, late.factor) == ("during_deal", 4, 3)
    assert _show_factors(h) == [4]  # one show factor: the largest (§6)


def test_show_before_the_deal_is_x5_section_6() -> None:
    h = start(LAIZI, show_before_deal=[2])
    shown = of_type(h.events, CardsShown)[0]
    assert (shown.seat, shown.when, shown.factor) == (2, "before_deal", 5)
    assert _show_factors(h) == [5]


def test_several_shows_multiply_once_by_the_largest_section_6() -> None:
    h = start(TIANDI, first_bidder=0)
    ok(h, ShowCards(0))  # x2
    ok(h, ShowCards(1, cards_held=3))  # x4 replaces x2
    ok(h, ShowCards(2))  # x2 does not add
    assert _show_factors(h) == [4]
    initial = h.state.room.initial_multiplier
    assert h.state.multiplier.total == 4 * initial


def test_show_once_per_seat_and_only_before_the_first_play_section_6() -> None:
    h = start(LAIZI, first_bidder=0)
    ok(h, ShowCards(0))
    assert refused(h, ShowCards(0)) is RejectReason.ALREADY_SHOWN
    ok(h, Bid.call(0))
    assert refused(h, ShowCards(1, cards_held=4)) is RejectReason.WRONG_PHASE  # deal is over
    _grab(h, "pass", "pass")
    ok(h, ShowCards(1))  # after bidding, before the first play: still x2
    landlord = h.state.landlord
    view = view_for(h.state, landlord)
    move = view.legal_moves()[0]
    from ddz.domain.players import play_of

    ok(h, play_of(landlord, move))
    assert refused(h, ShowCards(2)) is RejectReason.WRONG_PHASE


def test_a_redeal_undoes_the_shows_and_grabs_of_the_round_section_6() -> None:
    h = start(LAIZI, first_bidder=0, show_before_deal=[1])
    ok(h, ShowCards(0))
    _grab(h, "pass", "pass", "pass")
    # seat 1 chose to play open before any deal: it shows again in the new deal (x5)
    assert _show_factors(h) == [5]
    assert [s.seat for s in h.state.shown] == [1]
    assert h.state.shown[0].cards == h.state.cards[1]


# --- bomb limits (§7) ---------------------------------------------------------------------


def test_ct_bomb_limits_by_bid_section_7() -> None:
    h = start(CT, first_bidder=0)
    events = bids(h, 1, 2, 0)  # seat 0 called 1, seat 1 called 2 (landlord), seat 2 passed
    assert of_type(events, LandlordChosen)[0].bomb_limits == (1, None, 1)
    h = start(CT, first_bidder=0)
    events = bids(h, 2, 0, 3)  # seat 0 called 2, seat 1 passed, seat 2 called 3 (landlord)
    assert of_type(events, LandlordChosen)[0].bomb_limits == (2, 1, None)


def test_ct_farmer_whose_turn_never_came_has_no_limit_section_7() -> None:
    h = start(CT, first_bidder=0)
    events = bids(h, 0, 3)
    assert of_type(events, LandlordChosen)[0].bomb_limits == (1, None, None)
    assert view_for(h.state, 0).bombs_left == (1, None, None)


def test_ct_all_pass_limits_section_7() -> None:
    h = start(CT, first_bidder=0)
    events = bids(h, 0, 0, 0)
    landlord = of_type(events, LandlordChosen)[0]
    assert landlord.seat == h.state.first_bidder
    farmers = [s for s in range(3) if s != landlord.seat]
    assert all(landlord.bomb_limits[f] == 1 for f in farmers)  # both passed on their turn


def test_no_bomb_limits_outside_ct_section_7() -> None:
    h = start(CLASSIC, first_bidder=0)
    events = bids(h, 1, 0, 0)
    assert of_type(events, LandlordChosen)[0].bomb_limits == (None, None, None)
