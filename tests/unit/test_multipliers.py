"""RULES.md §6 (show cards) and §9 (multipliers) as a breakdown of factors.

Expected factors are the values of the §9 table, written out here, not read from the
rule sets under test.
"""

from __future__ import annotations

import pytest
from ddz.domain.cards import Rank
from ddz.domain.multipliers import (
    Factor,
    MultiplierBreakdown,
    bomb,
    bomb_factor,
    grab_factor,
    initial_factor,
    show_cards_factor,
    show_factor,
    spring_factor,
)
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, RuleSet

B, SKY, ROCKET = ComboType.BOMB, ComboType.SKY_BOMB, ComboType.ROCKET
SOFT, HARD, MIXED, PURE = BombClass.SOFT, BombClass.HARD, BombClass.MIXED, BombClass.PURE


def reading(kind: ComboType, size: int, made: BombClass | None = None) -> Reading:
    main = Rank.RED_JOKER if kind == ROCKET else Rank.SEVEN
    return Reading(kind, main, 1, size, made)


# --- the breakdown ---------------------------------------------------------------------


def test_total_is_the_product_of_the_factors_and_1_when_empty() -> None:
    """§9: the multiplier is the product of every factor."""
    assert MultiplierBreakdown().total == 1
    breakdown = MultiplierBreakdown((Factor("initial", 3), Factor("grab", 2), Factor("bomb", 4)))
    assert breakdown.total == 24


def test_without_drops_every_factor_of_a_reason() -> None:
    """§10.3 counts the multiplier "not counting the initial one"."""
    breakdown = MultiplierBreakdown(
        (Factor("initial", 3), Factor("grab", 2), Factor("initial", 5), Factor("rocket", 4))
    )
    assert breakdown.without("initial").total == 8
    assert [f.reason for f in breakdown.without("initial").factors] == ["grab", "rocket"]
    assert breakdown.without("spring") == breakdown


def test_with_factor_appends_and_leaves_the_original_alone() -> None:
    first = MultiplierBreakdown((Factor("grab", 2),))
    second = first.with_factor(Factor("spring", 2, seat=1, event=40))
    assert first.total == 2
    assert second.total == 4
    assert second.factors[-1] == Factor("spring", 2, seat=1, event=40)


def test_to_json_names_each_factor_and_its_cause() -> None:
    breakdown = MultiplierBreakdown(
        (Factor("initial", 1), Factor("bomb", 2, seat=2, event=17, detail="soft bomb of 7s"))
    )
    assert breakdown.to_json() == {
        "total": 2,
        "factors": [
            {"reason": "initial", "factor": 1},
            {"reason": "bomb", "factor": 2, "seat": 2, "event": 17, "detail": "soft bomb of 7s"},
        ],
    }


@pytest.mark.parametrize("value", [0, -2, True])
def test_a_factor_is_a_whole_number_of_at_least_one(value: int) -> None:
    with pytest.raises(ValueError):
        Factor("bomb", value)


# --- §9 table, row by row -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "kind", "size", "made", "expected"),
    [
        # classic: 4-card bomb x2, rocket x2
        (CLASSIC, B, 4, None, 2),
        (CLASSIC, ROCKET, 2, None, 2),
        # ct: 4-card bomb x1 (no effect), 5-card bomb x2, sky bomb x2, rocket x2
        (CT, B, 4, None, 1),
        (CT, B, 5, None, 2),
        (CT, SKY, 6, None, 2),
        (CT, ROCKET, 4, None, 2),
        # laizi: soft x2, hard x4, pure wildcard x4, rocket x4
        (LAIZI, B, 4, SOFT, 2),
        (LAIZI, B, 4, HARD, 4),
        (LAIZI, B, 4, PURE, 4),
        (LAIZI, ROCKET, 2, None, 4),
        # tiandi: soft x2, hard x4, mixed / pure wildcard x4, 5..12 cards x4, rocket x4
        (TIANDI, B, 4, SOFT, 2),
        (TIANDI, B, 4, HARD, 4),
        (TIANDI, B, 4, MIXED, 4),
        (TIANDI, B, 4, PURE, 4),
        (TIANDI, B, 5, SOFT, 4),
        (TIANDI, B, 8, HARD, 4),
        (TIANDI, B, 12, SOFT, 4),
        (TIANDI, ROCKET, 2, None, 4),
    ],
)
def test_section_9_bomb_factors(
    rules: RuleSet, kind: ComboType, size: int, made: BombClass | None, expected: int
) -> None:
    """§9: each bomb-class play multiplies the hand by its row of the table."""
    assert bomb_factor(rules, reading(kind, size, made)) == expected


def test_bomb_factor_uses_the_classifiers_tier_when_set() -> None:
    """§4/§9: a classified reading carries its ladder rung; the factor is that rung's."""
    hard = Reading(B, Rank.SEVEN, 1, 4, HARD, tier=1)
    assert bomb_factor(LAIZI, hard) == 4


def test_bomb_factor_refuses_a_non_bomb_and_an_unknown_bomb() -> None:
    with pytest.raises(ValueError):
        bomb_factor(CLASSIC, Reading(ComboType.PAIR, Rank.SEVEN, 1, 2))
    with pytest.raises(ValueError):  # classic has no 5-card bomb (§4)
        bomb_factor(CLASSIC, reading(B, 5))


def test_bomb_factor_names_its_reason_and_cause() -> None:
    factor = bomb(LAIZI, Reading(B, Rank.SEVEN, 1, 4, SOFT), seat=2, event=31)
    assert (factor.reason, factor.factor, factor.seat, factor.event) == ("bomb", 2, 2, 31)
    assert "soft" in factor.detail and "7" in factor.detail
    assert bomb(CT, reading(SKY, 6)).reason == "sky_bomb"
    assert bomb(CT, reading(ROCKET, 4)).reason == "rocket"


def test_grab_spring_anti_spring_and_initial() -> None:
    """§9: grab x2 each; spring / anti-spring x2; initial = the room's."""
    assert grab_factor(LAIZI) == Factor("grab", 2)
    assert spring_factor(CLASSIC) == Factor("spring", 2)
    assert spring_factor(CT, anti=True) == Factor("anti_spring", 2)
    assert initial_factor(3).factor == 3 and initial_factor(3).reason == "initial"


# --- §6 show cards -------------------------------------------------------------------------


def test_show_before_the_deal_is_x5_and_after_the_deal_x2() -> None:
    """§6: before the deal x5; after the deal and before the first play x2."""
    assert show_cards_factor(LAIZI, "before_deal") == 5
    assert show_cards_factor(LAIZI, "after_deal") == 2


@pytest.mark.parametrize(
    ("held", "expected"),
    [(0, 4), (1, 4), (8, 4), (9, 3), (16, 3), (17, 3)],
)
def test_show_during_the_deal_is_x4_up_to_half_a_hand_then_x3(held: int, expected: int) -> None:
    """§6 "during the deal x4..x3 by how many cards they had" (Decision: x4 while holding
    at most half of the 17-card hand, x3 with more)."""
    assert show_cards_factor(LAIZI, "during_deal", held) == expected


def test_show_during_the_deal_needs_the_cards_held_and_a_known_time() -> None:
    with pytest.raises(ValueError):
        show_cards_factor(LAIZI, "during_deal")
    with pytest.raises(ValueError):
        show_cards_factor(LAIZI, "during_deal", 18)
    with pytest.raises(ValueError):
        show_cards_factor(LAIZI, "after_first_play")


def test_show_factor_records_who_and_when() -> None:
    factor = show_factor(TIANDI, "during_deal", 5, seat=1, event=3)
    assert (factor.reason, factor.factor, factor.seat, factor.event) == ("show_cards", 4, 1, 3)
