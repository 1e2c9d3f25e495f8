"""What a plan is: its parts (``Part``, one planned play each), its score (``Plan``), the
worth of a card by its rank and the cost of one more turn; and a hand's counts split into
natural cards and wildcards, the planner's view of a hand (``plan.Planner``)."""

from __future__ import annotations

from dataclasses import dataclass

from ddz.domain.cards import RankCounts
from ddz.domain.readings import ComboType

TURN_COST = 7.0
"""What one more play costs a plan, in rank-value units (see ``rank_value``)."""

Chain = tuple[int, int, int, tuple[int, ...]]  # width, lowest rank, top rank, cards taken
CHAIN_KIND = {1: ComboType.SOLO_CHAIN, 2: ComboType.PAIR_CHAIN, 3: ComboType.TRIPLE_CHAIN}


def bomb_value(tier: int, main: int) -> float:
    """Worth of a bomb by its tier on the rule set's ladder and its main rank."""
    return 10.0 + 3.0 * tier + 0.5 * main


def rank_value(rank: int) -> float:
    """Worth of a single/pair/triple by its rank: ``3`` is -7, ``A`` 4, ``R`` 7."""
    return float(rank - 7)


@dataclass(frozen=True, slots=True)
class Part:
    """One planned play.

    ``ranks``: (rank, count) pairs of the main part as read (wildcards counted at
    the rank they stand for); ``subs``: the ranks wildcards stand for, one entry
    per wildcard; ``kickers``: (rank, count) pairs hung on a triple or plane.
    ``natural_wild``: the part is wildcards played as their own rank.
    """

    type: ComboType
    main: int
    length: int
    ranks: tuple[tuple[int, int], ...]
    subs: tuple[int, ...] = ()
    kickers: tuple[tuple[int, int], ...] = ()
    value: float = 0.0
    natural_wild: bool = False

    @property
    def size(self) -> int:
        return sum(n for _, n in self.ranks) + sum(n for _, n in self.kickers)

    @property
    def is_bomb(self) -> bool:
        return self.type in (ComboType.BOMB, ComboType.SKY_BOMB, ComboType.ROCKET)


@dataclass(frozen=True, slots=True)
class Plan:
    score: float
    parts: tuple[Part, ...]

    @property
    def turns(self) -> int:
        return len(self.parts)


def split_wild(hand: RankCounts, wild_ranks: tuple[int, ...]) -> tuple[RankCounts, int]:
    """Physical counts to (natural counts with wild ranks zeroed, number of wildcards)."""
    if not wild_ranks:
        return hand, 0
    natural = list(hand)
    wilds = 0
    for r in wild_ranks:
        wilds += natural[r]
        natural[r] = 0
    return tuple(natural), wilds


def chain_part(chain: Chain) -> Part:
    """The part a chain choice of the search stands for (built only for the plan
    returned: the search's memo holds plain tuples, which the garbage collector
    need not track)."""
    width, lo, hi, taken = chain
    ranks = tuple((r, width) for r in range(lo, hi + 1))
    subs = tuple(r for r, t in zip(range(lo, hi + 1), taken, strict=True) for _ in range(width - t))
    return Part(CHAIN_KIND[width], hi, hi - lo + 1, ranks, subs, value=rank_value(hi) + 1.0)


def kept_parts(kept: int, wild: int, pure_tier: int | None) -> list[Part]:
    """The parts of ``kept`` wildcards not lent, played as their own rank ``wild``: four
    of them a bomb on ``pure_tier`` (None: the rule set has no bomb of four)."""
    parts = []
    if kept >= 4 and pure_tier is not None:
        parts.append(
            Part(
                ComboType.BOMB,
                wild,
                1,
                ((wild, 4),),
                value=bomb_value(pure_tier, wild),
                natural_wild=True,
            )
        )
        kept -= 4
    if kept:
        kind = {1: ComboType.SINGLE, 2: ComboType.PAIR, 3: ComboType.TRIPLE}[min(kept, 3)]
        parts.append(
            Part(kind, wild, 1, ((wild, kept),), value=rank_value(wild) + 1.0, natural_wild=True)
        )
    return parts
