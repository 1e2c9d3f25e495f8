"""The hand's multiplier as a breakdown of factors (RULES.md §9), not just a product.

Each ``Factor`` says why the hand was multiplied (a grab, a show, a bomb, spring),
by how much, and, when known, who caused it and which event did. Support staff
and ``ddz audit`` read the breakdown; settlement (§10) only needs its ``total``.
The factor values come from the rule set, so nothing here branches on a variant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.ruleset import RuleSet


class Side(StrEnum):
    """Who won a hand (§8)."""

    LANDLORD = "landlord"
    FARMERS = "farmers"


# Reasons a factor may carry; the values are the public JSON names.
REASONS = frozenset(
    {"initial", "grab", "show_cards", "bomb", "sky_bomb", "rocket", "spring", "anti_spring"}
)


@dataclass(frozen=True, slots=True)
class Factor:
    """One multiplication of the hand: ``factor`` for ``reason`` (§9)."""

    reason: str
    factor: int
    seat: int | None = None  # who caused it, if anyone
    event: int | None = None  # index/version of the event that caused it, if any
    detail: str = ""  # e.g. "soft bomb of 7s", "show before deal"

    def __post_init__(self) -> None:
        # A factor of 0 would wipe out the hand and a negative one would swap the
        # winners and losers; neither is a multiplier any rule of §9 produces.
        if isinstance(self.factor, bool) or not isinstance(self.factor, int) or self.factor < 1:
            raise ValueError(f"a multiplier factor is a whole number >= 1, got {self.factor!r}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "factor": self.factor}
        if self.seat is not None:
            out["seat"] = self.seat
        if self.event is not None:
            out["event"] = self.event
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, slots=True)
class MultiplierBreakdown:
    """Every factor after the base score, in the order they happened."""

    factors: tuple[Factor, ...] = ()

    @property
    def total(self) -> int:
        """The product of the factors (1 when there are none)."""
        return math.prod(f.factor for f in self.factors)

    def without(self, reason: str) -> MultiplierBreakdown:
        """The breakdown with every factor of ``reason`` left out (e.g. ``"initial"``,
        which §10.3's escape rule does not count)."""
        return MultiplierBreakdown(tuple(f for f in self.factors if f.reason != reason))

    def with_factor(self, f: Factor) -> MultiplierBreakdown:
        return MultiplierBreakdown((*self.factors, f))

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "factors": [f.to_json() for f in self.factors]}


def initial_factor(initial_multiplier: int) -> Factor:
    """§9 "initial": 1 in classic and ct, the room's initial multiplier otherwise."""
    return Factor("initial", initial_multiplier, detail="room's initial multiplier")


def grab_factor(rules: RuleSet, seat: int | None = None, event: int | None = None) -> Factor:
    """§6/§9: each grab doubles the hand."""
    return Factor("grab", rules.grab_multiplier, seat, event)


def spring_factor(
    rules: RuleSet, *, anti: bool = False, seat: int | None = None, event: int | None = None
) -> Factor:
    """§8/§9: spring and anti-spring each double the hand."""
    return Factor("anti_spring" if anti else "spring", rules.spring_multiplier, seat, event)


# --- bombs (§9, from the rule set's ladder of §4) ------------------------------------


def bomb_tier_index(
    rules: RuleSet, type: ComboType, size: int, bomb_class: BombClass | None = None
) -> int:
    """The rung of ``rules.bomb_ladder`` a bomb-class play sits on.

    As in ``BombTier``: the first tier whose type and size match and whose class is
    ``None`` (any make) or the play's class.
    """
    for index, tier in enumerate(rules.bomb_ladder):
        if tier.type == type and tier.size == size and tier.bomb_class in (None, bomb_class):
            return index
    made = f"{bomb_class.value} " if bomb_class is not None else ""
    raise ValueError(f"no {made}{type.value} of {size} cards in {rules.name}'s bomb ladder (§4)")


def bomb_factor(rules: RuleSet, reading: Reading) -> int:
    """§9: what a bomb-class play multiplies the hand by, from the rule set's ladder."""
    if not reading.is_bomb:
        raise ValueError(f"a {reading.type.value} is not a bomb-class play (§4)")
    # ``tier`` is set by the classifier; a reading built by hand has -1 and is looked up.
    tier = reading.tier
    if not 0 <= tier < len(rules.bomb_ladder):
        tier = bomb_tier_index(rules, reading.type, reading.size, reading.bomb_class)
    return rules.bomb_ladder[tier].multiplier


def bomb_detail(type: ComboType, size: int, bomb_class: BombClass | None, main: str = "") -> str:
    """Readable name of a bomb for a factor's detail: "soft bomb of 7s"."""
    made = f"{bomb_class.value} " if bomb_class is not None else ""
    of = f" of {main}s" if main else ""
    what = type.value.replace("_", " ")
    if type == ComboType.ROCKET:
        return what
    return f"{made}{size}-card {what}{of}"


def bomb(
    rules: RuleSet, reading: Reading, seat: int | None = None, event: int | None = None
) -> Factor:
    """The ``Factor`` of one bomb-class play (reason ``bomb``, ``sky_bomb`` or ``rocket``)."""
    detail = bomb_detail(reading.type, reading.size, reading.bomb_class, reading.main.symbol)
    return Factor(reading.type.value, bomb_factor(rules, reading), seat, event, detail)


# --- show cards (§6) -------------------------------------------------------------------

SHOW_WHEN = ("before_deal", "during_deal", "after_deal")


def show_cards_factor(rules: RuleSet, when: str, cards_held: int | None = None) -> int:
    """§6: before the deal x5, during it x4..x3, after it (before the first play) x2.

    **Decision** for "x4..x3 by how many cards they had": a show during the deal is
    worth ``rules.show_card_factors["during_deal"]`` (x4) while the shower holds at
    most half a hand (``2 * cards_held <= hand_size``, 8 of 17), and
    ``rules.show_during_deal_late`` (x3) once they hold more: the fewer cards seen,
    the bigger the risk, the bigger the reward.
    """
    factors = dict(rules.show_card_factors)
    if when not in factors:
        raise ValueError(f"unknown show time {when!r} (expected one of {', '.join(factors)})")
    if when != "during_deal":
        return factors[when]
    if cards_held is None:
        raise ValueError("a show during the deal needs cards_held (§6: x4..x3 by cards held)")
    if not 0 <= cards_held <= rules.hand_size:
        raise ValueError(f"cards_held must be 0..{rules.hand_size}, got {cards_held}")
    if 2 * cards_held <= rules.hand_size:
        return factors[when]
    return rules.show_during_deal_late


def show_factor(
    rules: RuleSet,
    when: str,
    cards_held: int | None = None,
    seat: int | None = None,
    event: int | None = None,
) -> Factor:
    """The ``Factor`` of one player's show (§6: a player's show counts once, at the
    largest factor they showed at; the hand keeps only that one)."""
    held = f" holding {cards_held}" if when == "during_deal" else ""
    detail = f"show {when.replace('_', ' ')}{held}"
    return Factor("show_cards", show_cards_factor(rules, when, cards_held), seat, event, detail)
