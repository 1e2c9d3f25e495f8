"""A variant of the game is a value: ``RuleSet`` (RULES.md, every **Decision** a field).

Classic, ct, laizi and tiandi are four instances; a room may build its own with
``dataclasses.replace``. Nothing in the engine branches on a variant's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ddz.domain.readings import BombClass, ComboType


class Bidding(StrEnum):
    CALL_SCORE = "call_score"  # §6: pass or call 1/2/3, each player once
    GRAB = "grab"  # §6: call, then grab (x2 each), first caller's last chance


class AllPass(StrEnum):
    """What happens when nobody calls (§6)."""

    REDEAL = "redeal"  # classic (Decision), laizi, tiandi
    FIRST_BIDDER_LANDLORD = "first_bidder_landlord"  # ct: golden card holder, base 1


class WildcardDraw(StrEnum):
    """When a wildcard rank is drawn and shown (§5)."""

    BEFORE_BIDDING = "before_bidding"  # tiandi's heaven rank
    AFTER_LANDLORD = "after_landlord"  # laizi's rank, tiandi's earth rank


class Scoring(StrEnum):
    """Which settlement of §10 applies."""

    POINTS = "points"  # §10.1
    CT_POINTS = "ct_points"  # §10.2: rake, cap, escape penalty
    BEANS = "beans"  # §10.3


@dataclass(frozen=True, slots=True)
class BombTier:
    """One rung of a bomb ladder (§4), with its multiplier (§9).

    A bomb-class play sits on the first tier whose type and size match and whose
    ``bomb_class`` is ``None`` (any make) or equal to the play's class. Plays on a
    higher tier beat plays on a lower one; within a tier the higher main rank wins.
    """

    type: ComboType
    size: int
    bomb_class: BombClass | None = None
    multiplier: int = 2


@dataclass(frozen=True, slots=True)
class KickerRules:
    """Kicker flags of §3; all off by default (national rules as RLCard applies them)."""

    four_as_kickers: bool = False  # 33334444 as four + two pairs
    jokers_as_kickers: bool = False  # B and R together as kickers
    kicker_of_main_rank: bool = False  # 33334 as triple + single


@dataclass(frozen=True, slots=True)
class BombLimits:
    """ct's bomb limit (§7): most bomb-class plays per hand; ``None`` = no limit."""

    landlord: int | None = None
    turn_never_came: int | None = None
    by_call: tuple[tuple[int, int | None], ...] = ((2, 2), (1, 1))
    passed: int | None = 1

    def for_farmer(self, call: int | None, had_turn: bool) -> int | None:
        """Limit for a farmer who called ``call`` (None: passed or never asked)."""
        if not had_turn:
            return self.turn_never_came
        if call is None:
            return self.passed
        return dict(self.by_call).get(call)


@dataclass(frozen=True, slots=True)
class RuleSet:
    name: str
    # -- deck (§1)
    rank_copies: int = 4  # cards of each rank 3..2
    joker_copies: int = 1  # copies of each joker
    hand_size: int = 17
    bottom_size: int = 3
    # -- combinations (§3)
    combo_types: frozenset[ComboType] = frozenset(ComboType)
    min_solo_chain: int = 5
    min_pair_chain: int = 3
    min_triple_chain: int = 2
    kickers: KickerRules = KickerRules()
    # -- bombs (§4), low to high; includes the rocket
    bomb_ladder: tuple[BombTier, ...] = ()
    # -- wildcards (§5): one draw per wildcard rank, in order
    wildcard_draws: tuple[WildcardDraw, ...] = ()
    # -- seats and bidding (§2, §6)
    golden_card: bool = True
    bidding: Bidding = Bidding.CALL_SCORE
    all_pass: AllPass = AllPass.REDEAL
    show_cards: bool = False
    bomb_limits: BombLimits | None = None  # §7, ct only
    # -- multipliers and settlement (§8-§10)
    spring_multiplier: int = 2
    grab_multiplier: int = 2
    show_card_factors: tuple[tuple[str, int], ...] = field(
        default=(("before_deal", 5), ("during_deal", 4), ("after_deal", 2))
    )
    # §6 "during the deal x4..x3" (Decision): "during_deal" above applies while the
    # shower holds at most half a hand; with more cards it falls to this factor.
    show_during_deal_late: int = 3
    scoring: Scoring = Scoring.POINTS

    def __hash__(self) -> int:
        # The rules engine caches per rule set, so a rule set is hashed on every engine
        # call; hashing all fields (nested tuples of tiers) costs more than the look-up.
        # Equal rule sets have equal names, so hashing the name keeps hash/eq consistent.
        return hash(self.name)

    @property
    def deck_size(self) -> int:
        return 13 * self.rank_copies + 2 * self.joker_copies

    @property
    def wildcard_count(self) -> int:
        return len(self.wildcard_draws)

    @property
    def max_copies(self) -> tuple[int, ...]:
        """The most cards of each rank a deck holds (index by ``Rank``)."""
        return (self.rank_copies,) * 13 + (self.joker_copies,) * 2


def _ladder(*tiers: BombTier) -> tuple[BombTier, ...]:
    return tiers


CLASSIC = RuleSet(
    name="classic",
    bomb_ladder=_ladder(
        BombTier(ComboType.BOMB, 4, multiplier=2),
        BombTier(ComboType.ROCKET, 2, multiplier=2),
    ),
    show_cards=False,  # §6: optional in classic; a room may turn it on
)

CT = RuleSet(
    name="ct",
    rank_copies=6,
    joker_copies=2,
    hand_size=26,
    bottom_size=4,
    # §3: ct allows exactly the listed types (Decision).
    combo_types=frozenset(ComboType)
    - {
        ComboType.SOLO_CHAIN,
        ComboType.TRIPLE_SINGLE,
        ComboType.PLANE_SINGLES,
        ComboType.FOUR_TWO_SINGLES,
        ComboType.FOUR_TWO_PAIRS,
    },
    bomb_ladder=_ladder(
        BombTier(ComboType.BOMB, 4, multiplier=1),
        BombTier(ComboType.BOMB, 5, multiplier=2),
        BombTier(ComboType.SKY_BOMB, 6, multiplier=2),
        BombTier(ComboType.ROCKET, 4, multiplier=2),
    ),
    all_pass=AllPass.FIRST_BIDDER_LANDLORD,
    bomb_limits=BombLimits(),
    scoring=Scoring.CT_POINTS,
)

LAIZI = RuleSet(
    name="laizi",
    bomb_ladder=_ladder(
        BombTier(ComboType.BOMB, 4, BombClass.SOFT, multiplier=2),
        BombTier(ComboType.BOMB, 4, BombClass.HARD, multiplier=4),
        BombTier(ComboType.BOMB, 4, BombClass.PURE, multiplier=4),
        BombTier(ComboType.ROCKET, 2, multiplier=4),
    ),
    wildcard_draws=(WildcardDraw.AFTER_LANDLORD,),
    bidding=Bidding.GRAB,
    show_cards=True,
    scoring=Scoring.BEANS,
)

TIANDI = RuleSet(
    name="tiandi",
    bomb_ladder=_ladder(
        BombTier(ComboType.BOMB, 4, BombClass.SOFT, multiplier=2),
        BombTier(ComboType.BOMB, 4, BombClass.HARD, multiplier=4),
        BombTier(ComboType.BOMB, 4, BombClass.MIXED, multiplier=4),
        BombTier(ComboType.BOMB, 4, BombClass.PURE, multiplier=4),
        # §4/§9: 5 to 12 cards of one rank, more cards beat fewer; x4 (Decision).
        *(BombTier(ComboType.BOMB, n, multiplier=4) for n in range(5, 13)),
        BombTier(ComboType.ROCKET, 2, multiplier=4),
    ),
    wildcard_draws=(WildcardDraw.BEFORE_BIDDING, WildcardDraw.AFTER_LANDLORD),
    bidding=Bidding.GRAB,
    show_cards=True,
    scoring=Scoring.BEANS,
)

VARIANTS: dict[str, RuleSet] = {rs.name: rs for rs in (CLASSIC, CT, LAIZI, TIANDI)}


def ruleset_for(variant: str) -> RuleSet:
    try:
        return VARIANTS[variant]
    except KeyError:
        raise ValueError(
            f"unknown variant {variant!r} (expected one of {', '.join(VARIANTS)})"
        ) from None
