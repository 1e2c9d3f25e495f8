"""End of hand (RULES.md §8), spring and anti-spring (§8, §9), settlement at the end
(§10) and the seed reveal. Expected ledgers are worked out by hand from §10."""

from __future__ import annotations

from fractions import Fraction

from ddz.domain.cards import parse_ranks
from ddz.domain.hand import Disconnect, Pass, Play, RejectReason
from ddz.domain.hand.events import HandEnded, HandSettled, PlayMade, SeedRevealed
from ddz.domain.multipliers import Side
from ddz.domain.ruleset import CLASSIC, CT, LAIZI
from ddz.domain.settlement import RoomSettings
from hand_kit import SEED, of_type, ok, refused, rigged


def play(seat: int, text: str) -> Play:
    return Play(seat, parse_ranks(text))


def test_spring_landlord_out_and_farmers_played_nothing_section_8() -> None:
    h = rigged(CLASSIC, ["3456789", "KK", "AA"], "", landlord=0, base=3)
    events = ok(h, play(0, "3456789"))
    assert [type(e) for e in events] == [PlayMade, HandEnded, HandSettled, SeedRevealed]
    ended = events[1]
    assert ended.winner is Side.LANDLORD and ended.out_seat == 0
    assert ended.spring and not ended.anti_spring
    spring = [f for f in h.state.multiplier.factors if f.reason == "spring"]
    assert [(f.factor, f.event) for f in spring] == [(2, h.state.version - 3)]  # HandEnded
    # §10.1: bm = base 3 x 2 (spring) = 6; landlord +2·bm, each farmer -bm
    settled = events[2]
    assert settled.ledger.deltas == (12, -6, -6) and settled.ledger.system == 0
    assert settled.multiplier.total == 2 and settled.base == 3 and settled.landlord == 0


def test_anti_spring_farmers_win_after_the_landlord_made_only_the_lead_section_8() -> None:
    h = rigged(CLASSIC, ["34", "KQ", "5"], "", landlord=0)
    ok(h, play(0, "3"))
    ok(h, play(1, "K"))
    ok(h, Pass(2))
    ok(h, Pass(0))
    events = ok(h, play(1, "Q"))
    ended = of_type(events, HandEnded)[0]
    assert ended.winner is Side.FARMERS and ended.anti_spring and not ended.spring
    # §10.1: bm = 1 x 2 (anti-spring) = 2; landlord -4, farmers +2 each
    assert of_type(events, HandSettled)[0].ledger.deltas == (-4, 2, 2)


def test_no_spring_when_a_farmer_played_section_8() -> None:
    h = rigged(CLASSIC, ["3A", "46", "55"], "", landlord=0)
    ok(h, play(0, "3"))
    ok(h, play(1, "4"))  # a farmer played a card
    ok(h, Pass(2))
    events = ok(h, play(0, "A"))
    ended = of_type(events, HandEnded)[0]
    assert ended.winner is Side.LANDLORD and not ended.spring and not ended.anti_spring
    assert of_type(events, HandSettled)[0].ledger.deltas == (2, -1, -1)


def test_no_anti_spring_when_the_landlord_played_twice_section_8() -> None:
    h = rigged(CLASSIC, ["346", "5K", "Q"], "", landlord=0)
    ok(h, play(0, "3"))
    ok(h, play(1, "5"))
    ok(h, Pass(2))
    ok(h, play(0, "6"))
    ok(h, Pass(1))
    events = ok(h, play(2, "Q"))
    ended = of_type(events, HandEnded)[0]
    assert ended.winner is Side.FARMERS and not ended.anti_spring


def test_the_hand_ends_when_a_farmer_has_no_cards_section_8() -> None:
    h = rigged(CLASSIC, ["3K", "A", "4"], "", landlord=0)
    ok(h, play(0, "3"))
    events = ok(h, play(1, "A"))
    ended = of_type(events, HandEnded)[0]
    assert ended.winner is Side.FARMERS and ended.out_seat == 1
    assert ended.final_hands[0] == h.state.cards[0] and len(ended.final_hands[1]) == 0
    assert h.state.winner is Side.FARMERS and h.state.turn == -1


def test_nothing_is_accepted_after_the_end() -> None:
    h = rigged(CLASSIC, ["3456789", "KK", "AA"], "", landlord=0)
    ok(h, play(0, "3456789"))
    assert refused(h, play(1, "K")) is RejectReason.WRONG_PHASE
    assert refused(h, Disconnect(1)) is RejectReason.WRONG_PHASE


def test_the_seed_is_revealed_after_settlement_issue_5() -> None:
    h = rigged(CLASSIC, ["3456789", "KK", "AA"], "", landlord=0)
    events = ok(h, play(0, "3456789"))
    assert events[-1] == SeedRevealed(SEED.hex())
    assert h.state.seed == SEED.hex() and h.state.ledger == events[-2].ledger


def test_ct_settlement_with_rake_at_the_end_section_10_2() -> None:
    room = RoomSettings(rake=Fraction(1, 4))
    h = rigged(CT, ["3456", "KK", "AA"], "", landlord=0, base=2, room=room)
    ok(h, play(0, "3"))
    ok(h, Pass(1))
    ok(h, Pass(2))
    ok(h, play(0, "4"))
    ok(h, Pass(1))
    ok(h, Pass(2))
    events = ok(h, play(0, "5"))
    ok(h, Pass(1))
    ok(h, Pass(2))
    events = ok(h, play(0, "6"))
    # spring: bm = 2 x 2 = 4; landlord +8 - rake floor(8/4) = 6; farmers -4; system 2
    ledger = of_type(events, HandSettled)[0].ledger
    assert ledger.deltas == (6, -4, -4) and ledger.system == 2


def test_bean_settlement_at_the_end_section_10_3() -> None:
    """§10.3: X = 1 x 2 (spring) x role x 0.25 (wildcard room), N = 10, A = 1."""
    room = RoomSettings(coefficient=10, fee=1)
    h = rigged(LAIZI, ["34567", "KK", "AA"], "", landlord=0, room=room, balances=(100, 100, 100))
    events = ok(h, play(0, "34567"))
    ledger = of_type(events, HandSettled)[0].ledger
    # each farmer pays 0.5·10 + 1 = 6; the landlord receives 1·10 - 1 = 9; system 3·1
    assert ledger.deltas == (9, -6, -6) and ledger.system == 3
