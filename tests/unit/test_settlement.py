"""RULES.md §10: settlement as a ledger of integer transfers.

Every expected figure is worked out by hand from RULES.md (the arithmetic is in the
comments) and from the choices in docs/RULE_DECISIONS.md "§10 Settlement".
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from ddz.domain.multipliers import Factor, MultiplierBreakdown, Side
from ddz.domain.ruleset import Scoring
from ddz.domain.settlement import (
    SCHEMES,
    HandOutcome,
    Ledger,
    RoomSettings,
    SettlementError,
    settle,
)

LANDLORD, FARMERS = Side.LANDLORD, Side.FARMERS


def mult(*factors: tuple[str, int]) -> MultiplierBreakdown:
    return MultiplierBreakdown(tuple(Factor(reason, n) for reason, n in factors))


def outcome(
    scoring: Scoring,
    winner: Side | None,
    *,
    landlord: int = 0,
    base: int = 1,
    multiplier: MultiplierBreakdown | None = None,
    room: RoomSettings | None = None,
    **extra: object,
) -> HandOutcome:
    return HandOutcome(
        scoring=scoring,
        room=room or RoomSettings(),
        landlord=landlord,
        base=base,
        multiplier=multiplier or MultiplierBreakdown(),
        winner=winner,
        **extra,  # type: ignore[arg-type]
    )


def reasons(ledger: Ledger, seat: int | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in ledger.lines:
        if line.seat == seat:
            out[line.reason] = out.get(line.reason, 0) + line.amount
    return out


def assert_ledger(ledger: Ledger, deltas: tuple[int, int, int], system: int) -> None:
    assert (ledger.deltas, ledger.system) == (deltas, system)
    assert sum(ledger.deltas) + ledger.system == 0  # §10: nothing created or lost
    for seat in (0, 1, 2, None):  # the figures are the sums of the lines
        total = sum(line.amount for line in ledger.lines if line.seat == seat)
        assert total == (ledger.system if seat is None else ledger.deltas[seat])


# --- §10 common ----------------------------------------------------------------------------


def test_section_10_every_scoring_has_a_scheme_chosen_by_data() -> None:
    """§10: the scheme comes from the Scoring value (a rule-set field), not a name."""
    assert set(SCHEMES) == set(Scoring)


def test_section_10_ledger_json_has_exactly_the_contract_keys() -> None:
    ledger = settle(outcome(Scoring.POINTS, LANDLORD, multiplier=mult(("bomb", 2))))
    data = ledger.to_json()
    assert list(data) == ["deltas", "system", "multiplier", "lines"]
    assert data["deltas"] == [4, -2, -2] and data["system"] == 0 and data["multiplier"] == 2
    assert {"seat": 0, "amount": 4, "reason": "win"} in data["lines"]


def test_section_10_scoring_override_settles_a_bean_variant_as_points() -> None:
    """A room may override the rule set's scheme: the data picks it."""
    hand = outcome(Scoring.POINTS, FARMERS, landlord=2, base=1, multiplier=mult(("grab", 2)))
    assert_ledger(settle(hand), (2, 2, -4), 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"escapee": 3}, "escapee"),
        ({"landlord": -1}, "landlord"),
        ({"landlord": True}, "landlord"),
        ({"base": 0}, "base"),
        ({"balances": (10, -1, 10)}, "balances"),
    ],
)
def test_section_10_impossible_outcomes_are_refused(
    change: dict[str, object], message: str
) -> None:
    fields: dict[str, object] = {"landlord": 0, "base": 1} | change
    hand = HandOutcome(
        scoring=Scoring.CT_POINTS,
        room=RoomSettings(),
        multiplier=MultiplierBreakdown(),
        winner=LANDLORD,
        **fields,  # type: ignore[arg-type]
    )
    with pytest.raises(SettlementError, match=message):
        settle(hand)


@pytest.mark.parametrize(
    "room",
    [
        {"rake": Fraction(3, 2)},
        {"rake": "abc"},
        {"rake": -0.1},
        {"cap": -1},
        {"fee": -5},
        {"initial_multiplier": 0},
        {"wildcard_coefficient": 0},
    ],
)
def test_room_settings_refuse_impossible_values(room: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RoomSettings(**room)  # type: ignore[arg-type]


@pytest.mark.parametrize("rake", ["0.05", "1/20", 0.05, Fraction(1, 20)])
def test_room_rake_is_an_exact_ratio(rake: object) -> None:
    assert RoomSettings(rake=rake).rake == Fraction(1, 20)  # type: ignore[arg-type]


@pytest.mark.parametrize("scoring", [Scoring.POINTS, Scoring.CT_POINTS, Scoring.BEANS])
def test_section_10_a_hand_without_winner_or_escape_cannot_be_settled(scoring: Scoring) -> None:
    with pytest.raises(SettlementError, match="winner"):
        settle(outcome(scoring, None))


# --- §10.1 classic ------------------------------------------------------------------------


def test_section_10_1_landlord_wins() -> None:
    """§10.1: landlord +2·bm, each farmer -bm. base 3 x bomb 2 x rocket 2: bm = 12."""
    hand = outcome(
        Scoring.POINTS, LANDLORD, landlord=1, base=3, multiplier=mult(("bomb", 2), ("rocket", 2))
    )
    ledger = settle(hand)
    assert_ledger(ledger, (-12, 24, -12), 0)
    assert ledger.multiplier == 4


def test_section_10_1_farmers_win() -> None:
    """§10.1: landlord -2·bm, each farmer +bm. base 2 x anti-spring 2: bm = 4."""
    hand = outcome(Scoring.POINTS, FARMERS, landlord=2, base=2, multiplier=mult(("anti_spring", 2)))
    assert_ledger(settle(hand), (4, 4, -8), 0)


def test_section_10_1_classic_has_no_escape_penalty() -> None:
    """§10.1 has no escape rule (Decision): the escapee settles like any seat."""
    hand = outcome(Scoring.POINTS, LANDLORD, base=1, escapee=1)
    assert_ledger(settle(hand), (2, -1, -1), 0)


# --- §10.2 ct ------------------------------------------------------------------------------


def test_section_10_2_landlord_wins_with_rake() -> None:
    """§10.2: landlord +2·bm - rake; each farmer -bm; system +rake.
    base 3 x 5-card bomb 2 x rocket 2 = bm 12; gain 24; rake 1/10 -> 2.4 -> 2."""
    room = RoomSettings(rake=Fraction(1, 10))
    hand = outcome(
        Scoring.CT_POINTS,
        LANDLORD,
        base=3,
        multiplier=mult(("initial", 1), ("bomb", 2), ("rocket", 2)),
        room=room,
    )
    ledger = settle(hand)
    assert_ledger(ledger, (22, -12, -12), 2)
    assert reasons(ledger, 0) == {"win": 24, "rake": -2}
    assert reasons(ledger, None) == {"rake": 2}


def test_section_10_2_farmers_win_with_rake_per_winner() -> None:
    """§10.2: landlord -2·bm; each farmer +bm - rake; system both rakes.
    bm 12; each farmer's gain 12 x 1/10 = 1.2 -> rake 1."""
    room = RoomSettings(rake=Fraction(1, 10))
    hand = outcome(
        Scoring.CT_POINTS, FARMERS, base=3, multiplier=mult(("bomb", 2), ("rocket", 2)), room=room
    )
    assert_ledger(settle(hand), (-24, 11, 11), 2)


def test_section_10_2_rake_is_rounded_down_for_the_winner() -> None:
    """§10.2 "the rake ... rounded down" (Decision): gain 30 at 1/20 = 1.5 -> rake 1."""
    hand = outcome(Scoring.CT_POINTS, LANDLORD, base=15, room=RoomSettings(rake="0.05"))  # type: ignore[arg-type]
    assert_ledger(settle(hand), (29, -15, -15), 1)


def test_section_10_2_cap_first_then_rake_on_the_capped_gain() -> None:
    """§10.2: base 3 x 2^4 = bm 48; 2·bm = 96 > cap 60: landlord's side moves 60, each
    farmer 30; then rake 1/20 of the capped 60 = 3 (not of 96)."""
    room = RoomSettings(rake=Fraction(1, 20), cap=60)
    m = mult(("bomb", 2), ("bomb", 2), ("rocket", 2), ("spring", 2))
    ledger = settle(outcome(Scoring.CT_POINTS, LANDLORD, base=3, multiplier=m, room=room))
    assert_ledger(ledger, (57, -30, -30), 3)
    assert reasons(ledger, 0) == {"win": 96, "cap": -36, "rake": -3}
    assert reasons(ledger, 1) == {"loss": -48, "cap": 18}


def test_section_10_2_cap_when_farmers_win() -> None:
    """Capped: landlord -60; each farmer +30 - floor(30/20 = 1.5) = +29; system 2."""
    room = RoomSettings(rake=Fraction(1, 20), cap=60)
    m = mult(("bomb", 2), ("bomb", 2), ("rocket", 2), ("spring", 2))
    hand = outcome(Scoring.CT_POINTS, FARMERS, base=3, multiplier=m, room=room)
    assert_ledger(settle(hand), (-60, 29, 29), 2)


def test_section_10_2_cap_not_reached_changes_nothing() -> None:
    """2·bm = 60 = cap: the cap does not bite."""
    room = RoomSettings(cap=60)
    ledger = settle(outcome(Scoring.CT_POINTS, LANDLORD, base=30, room=room))
    assert_ledger(ledger, (60, -30, -30), 0)
    assert all(line.reason != "cap" for line in ledger.lines)


def test_section_10_2_an_odd_cap_moves_whole_points() -> None:
    """Decision: cap 61 cannot be halved; each farmer moves 30, the landlord 60."""
    room = RoomSettings(cap=61)
    hand = outcome(Scoring.CT_POINTS, FARMERS, base=100, room=room)
    assert_ledger(settle(hand), (-60, 30, 30), 0)


# The four escape cases of §10.2: base 2 x initial 2 x 5-card bomb 2: bm = 8;
# penalty 10 x initial 2 = 20; rake 1/4.
ESCAPE_ROOM = RoomSettings(initial_multiplier=2, rake=Fraction(1, 4))
ESCAPE_MULT = mult(("initial", 2), ("bomb", 2))


def ct_escape(winner: Side, escapee: int) -> Ledger:
    return settle(
        outcome(
            Scoring.CT_POINTS,
            winner,
            landlord=0,
            base=2,
            multiplier=ESCAPE_MULT,
            room=ESCAPE_ROOM,
            escapee=escapee,
        )
    )


def test_section_10_2_escape_landlord_wins_a_farmer_escaped() -> None:
    """Landlord +2·bm - rake = 16 - 4; the other farmer 0; the escaped farmer
    -2·bm - penalty = -16 - 20; system rake + penalty = 24."""
    ledger = ct_escape(LANDLORD, escapee=2)
    assert_ledger(ledger, (12, 0, -36), 24)
    assert reasons(ledger, 1) == {}
    assert reasons(ledger, 2) == {"loss": -16, "escape_penalty": -20}


def test_section_10_2_escape_farmers_win_a_farmer_escaped() -> None:
    """Landlord -2·bm = -16; the other farmer +bm - rake = 8 - 2; the escaped farmer
    +bm - penalty - rake = 8 - 20 - 2 (Decision: +bm, not the source's +2·bm);
    system 2·rake + penalty = 24."""
    assert_ledger(ct_escape(FARMERS, escapee=1), (-16, -14, 6), 24)


def test_section_10_2_escape_landlord_escaped_and_wins() -> None:
    """Landlord +2·bm - penalty - rake = 16 - 20 - 4; each farmer -8; system 4 + 20."""
    assert_ledger(ct_escape(LANDLORD, escapee=0), (-8, -8, -8), 24)


def test_section_10_2_escape_landlord_escaped_and_loses() -> None:
    """Landlord -2·bm - penalty = -36; each farmer +bm - rake = 6; system 2·2 + 20."""
    assert_ledger(ct_escape(FARMERS, escapee=0), (-36, 6, 6), 24)


def test_section_10_2_penalty_ignores_base_bombs_and_spring() -> None:
    """The penalty is 10 x the initial multiplier (1 here): 10, whatever base, bombs or
    spring. base 3 x rocket 2 x spring 2 = bm 12; landlord escaped and wins: 24 - 10."""
    m = mult(("initial", 1), ("rocket", 2), ("spring", 2))
    hand = outcome(Scoring.CT_POINTS, LANDLORD, base=3, multiplier=m, escapee=0)
    ledger = settle(hand)
    assert_ledger(ledger, (14, -12, -12), 10)
    assert reasons(ledger, None) == {"escape_penalty": 10}


def test_section_10_2_penalty_uses_the_rooms_initial_multiplier_when_not_in_breakdown() -> None:
    room = RoomSettings(initial_multiplier=3)
    hand = outcome(Scoring.CT_POINTS, FARMERS, base=1, room=room, escapee=0)
    # landlord -2 - 30; farmers +1 each; system 30
    assert_ledger(settle(hand), (-32, 1, 1), 30)


def test_section_10_2_penalty_sits_outside_the_cap() -> None:
    """bm 8 capped at 10 (each farmer 5): landlord +10; the escaped farmer -10 - 20."""
    room = RoomSettings(initial_multiplier=2, cap=10)
    hand = outcome(
        Scoring.CT_POINTS, LANDLORD, base=2, multiplier=ESCAPE_MULT, room=room, escapee=1
    )
    assert_ledger(settle(hand), (10, -30, 0), 20)


# --- §10.3 beans ---------------------------------------------------------------------------


def beans(winner: Side | None, total: int, **kw: object) -> HandOutcome:
    """A bean hand whose multiplier is ``total`` (grab 2 x the rest as one factor)."""
    factors = mult(("grab", 2), ("show_cards", total // 2)) if total > 1 else mult()
    return outcome(Scoring.BEANS, winner, multiplier=factors, **kw)  # type: ignore[arg-type]


BEAN_ROOM = RoomSettings(coefficient=1000, fee=50)


def test_section_10_3_worked_example() -> None:
    """§10.3 worked example: N = 1000, X = 6 (before the role coefficient), A = 50,
    landlord wins: landlord +12000 - 50, each farmer -6000 - 50, system +150."""
    ledger = settle(beans(LANDLORD, 6, room=BEAN_ROOM))
    assert_ledger(ledger, (12000 - 50, -6000 - 50, -6000 - 50), 150)
    assert reasons(ledger, 0) == {"win": 12000, "fee": -50}
    assert reasons(ledger, 1) == {"loss": -6000, "fee": -50}
    assert reasons(ledger, None) == {"fee": 150}


def test_section_10_3_farmers_win() -> None:
    """Loser pays X·N + A = 12000 + 50; each winner receives X·N - A = 6000 - 50."""
    ledger = settle(beans(FARMERS, 6, room=BEAN_ROOM, landlord=1))
    assert_ledger(ledger, (5950, -12050, 5950), 150)


def test_section_10_3_wildcard_room_applies_the_quarter() -> None:
    """Wildcard room: X x 0.25. multiplier 8: landlord X = 8 x 2 x 0.25 = 4, farmer 2;
    N = 100: landlord +400, each farmer -200."""
    room = RoomSettings(coefficient=100)
    ledger = settle(beans(LANDLORD, 8, room=room, wildcard_room=True))
    assert_ledger(ledger, (400, -200, -200), 0)


def test_section_10_3_wildcard_fractional_x_is_whole_after_n() -> None:
    """multiplier 6: farmer X = 1.5, landlord 3; N = 100: 150 and 300."""
    room = RoomSettings(coefficient=100)
    ledger = settle(beans(FARMERS, 6, room=room, wildcard_room=True))
    assert_ledger(ledger, (-300, 150, 150), 0)


def test_section_10_3_wildcard_cap_bounds_x_after_the_role_coefficient() -> None:
    """Decision: landlord X = 65536 x 2 x 0.25 = 32768 -> 10000; farmer X = 5000.
    N = 10: landlord +100000, each farmer -50000."""
    room = RoomSettings(coefficient=10)
    m = mult(*[("grab", 2)] * 16)
    ledger = settle(outcome(Scoring.BEANS, LANDLORD, multiplier=m, room=room, wildcard_room=True))
    assert_ledger(ledger, (100000, -50000, -50000), 0)


def test_section_10_3_no_quarter_or_cap_outside_wildcard_rooms() -> None:
    """Non-wildcard room: landlord X = 65536 x 2 = 131072, N = 1."""
    m = mult(*[("grab", 2)] * 16)
    ledger = settle(outcome(Scoring.BEANS, LANDLORD, multiplier=m, room=RoomSettings()))
    assert_ledger(ledger, (131072, -65536, -65536), 0)


def test_section_10_3_a_loser_pays_at_most_their_balance() -> None:
    """Farmer 1 holds 2050: fee 50, then at most 2000 of the 6000; the landlord receives
    only what was paid: 2000 + 6000 = 8000, minus the fee."""
    ledger = settle(beans(LANDLORD, 6, room=BEAN_ROOM, balances=(100000, 2050, 100000)))
    assert_ledger(ledger, (7950, -2050, -6050), 150)
    assert reasons(ledger, 1) == {"loss": -6000, "balance_limit": 4000, "fee": -50}


def test_section_10_3_winners_share_what_the_loser_paid_by_role() -> None:
    """The landlord holds 5051: fee 50, pays 5001 of 12000; the farmers share 5001 1:1,
    2500 each, the odd bean to the system."""
    ledger = settle(beans(FARMERS, 6, room=BEAN_ROOM, balances=(5051, 100000, 100000)))
    assert_ledger(ledger, (-5051, 2450, 2450), 151)
    assert reasons(ledger, None) == {"fee": 150, "rounding": 1}


def test_section_10_3_a_winner_receives_at_most_their_balance_the_rest_stays_with_payers() -> None:
    """The landlord holds 3000: receives at most 3000 of the 12000 paid; the 9000 kept go
    back to the farmers, 4500 each: each pays 1500."""
    ledger = settle(beans(LANDLORD, 6, room=BEAN_ROOM, balances=(3000, 100000, 100000)))
    assert_ledger(ledger, (2950, -1550, -1550), 150)


def test_section_10_3_one_winners_limit_stays_with_the_payer_not_the_other_winner() -> None:
    """Farmer 1 holds 1000: receives 1000 of their 6000; the 5000 kept stay with the
    landlord (pays 7000); farmer 2 still receives 6000."""
    ledger = settle(beans(FARMERS, 6, room=BEAN_ROOM, balances=(100000, 1000, 100000)))
    assert_ledger(ledger, (-7050, 950, 5950), 150)


def test_section_10_3_kept_beans_split_between_payers_round_down() -> None:
    """N = 1, X = 6: farmers pay 6 each; the landlord holds 7 and receives 7; the 5 kept
    go back 5 x 6/12 = 2.5 -> 2 to each farmer, the odd bean to the system."""
    room = RoomSettings(coefficient=1)
    ledger = settle(beans(LANDLORD, 6, room=room, balances=(7, 100, 100)))
    assert_ledger(ledger, (7, -4, -4), 1)


def test_section_10_3_nobody_goes_below_zero_even_for_the_fee() -> None:
    """The landlord holds 30 < A: pays a fee of 30 and nothing more; the farmers receive
    nothing and pay their fee."""
    ledger = settle(beans(FARMERS, 6, room=BEAN_ROOM, balances=(30, 100000, 100000)))
    assert_ledger(ledger, (-30, -50, -50), 130)


# §10.3 escapes: N = 100, A = 10, initial 2, non-wildcard room.
ESC_ROOM = RoomSettings(coefficient=100, fee=10, initial_multiplier=2)


def bean_escape(
    escapee: int, *factors: tuple[str, int], balances: tuple[int, int, int] | None = None
) -> Ledger:
    m = mult(("initial", 2), *factors)
    hand = outcome(
        Scoring.BEANS,
        None,
        landlord=0,
        multiplier=m,
        room=ESC_ROOM,
        escapee=escapee,
        balances=balances,
    )
    return settle(hand)


def test_section_10_3_landlord_escapes_below_10_pays_as_if_20x() -> None:
    """grab 2 x soft bomb 2 = 4 < 10 (initial not counted): as if initial 2 x 20 = 40;
    X = 1 x 40 x 2 (landlord) = 80; N 100: 8000, shared 1:1 by the farmers."""
    ledger = bean_escape(0, ("grab", 2), ("bomb", 2))
    assert_ledger(ledger, (-8010, 3990, 3990), 30)
    assert reasons(ledger, 0) == {"escape_penalty": -8000, "fee": -10}
    assert reasons(ledger, 1) == {"escape_share": 4000, "fee": -10}


def test_section_10_3_landlord_escapes_at_10_or_more_pays_4x_counting_unplayed_bombs() -> None:
    """Played: grab 2 x hard bomb 4 = 8; with the unplayed rocket 4 held: 32 >= 10:
    4 x actual = 4 x (2 x 32) = 256; X = 256 x 2 = 512; N 100: 51200, 25600 each."""
    played = mult(("initial", 2), ("grab", 2), ("bomb", 4))
    at_escape = played.with_factor(Factor("rocket", 4))
    hand = outcome(
        Scoring.BEANS,
        None,
        multiplier=played,
        room=ESC_ROOM,
        escapee=0,
        escape_multiplier=at_escape,
    )
    assert_ledger(settle(hand), (-51210, 25590, 25590), 30)


def test_section_10_3_farmer_escapes_below_10_pays_as_if_10x() -> None:
    """grab 2 x soft bomb 2 = 4 < 10: as if initial 2 x 10 = 20; X = 20 x 1 = 20; 2000,
    shared landlord 2 : farmer 1 -> 1333 and 666, the odd bean to the system."""
    ledger = bean_escape(1, ("grab", 2), ("bomb", 2))
    assert_ledger(ledger, (1323, -2010, 656), 31)


def test_section_10_3_farmer_escapes_at_exactly_10_pays_2x() -> None:
    """show 5 x grab 2 = 10, not below 10: 2 x actual = 2 x (2 x 10) = 40; X = 40; 4000,
    shared 2:1 -> 2666 and 1333, one bean to the system."""
    ledger = bean_escape(1, ("show_cards", 5), ("grab", 2))
    assert_ledger(ledger, (2656, -4010, 1323), 31)


def test_section_10_3_escape_before_the_hand_starts() -> None:
    """§11: leaving after the match, before the first play: multiplier 1 (initial only)
    < 10; a farmer pays as if initial 2 x 10: 2000."""
    ledger = bean_escape(2)
    assert ledger.deltas[2] == -2010


def test_section_10_3_escape_penalty_within_balance_limits() -> None:
    """The escaped farmer holds 1010: fee 10, pays 1000 of 2000; shared 2:1 -> 666, 333."""
    ledger = bean_escape(1, ("grab", 2), balances=(100000, 1010, 100000))
    assert_ledger(ledger, (656, -1010, 323), 31)


def test_section_10_3_escape_penalty_capped_in_wildcard_rooms() -> None:
    """grab 2^14 = 16384 >= 10: 4 x 16384 x 2 x 0.25 = 32768 -> 10000; N 1."""
    m = mult(*[("grab", 2)] * 14)
    hand = outcome(
        Scoring.BEANS, None, multiplier=m, room=RoomSettings(), escapee=0, wildcard_room=True
    )
    assert_ledger(settle(hand), (-10000, 5000, 5000), 0)


def test_section_10_3_an_escape_ends_the_hand_so_it_has_no_winner() -> None:
    hand = outcome(Scoring.BEANS, LANDLORD, room=ESC_ROOM, escapee=1)
    with pytest.raises(SettlementError, match="escape"):
        settle(hand)
