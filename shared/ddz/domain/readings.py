"""What a set of played cards *is*: its combination type and rank (RULES.md §3-§5).

A ``Reading`` is one legal interpretation of a multiset of cards. Natural cards
have at most one reading per type; with wildcards one set of cards may have
several (§3 "Readings"), and the one taken is recorded in the play's event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ddz.domain.cards import RANK_SYMBOLS, Rank


class ComboType(StrEnum):
    """Combination types; the values are the public names used in JSON (§3)."""

    SINGLE = "single"
    PAIR = "pair"
    TRIPLE = "triple"
    TRIPLE_SINGLE = "triple_single"
    TRIPLE_PAIR = "triple_pair"
    SOLO_CHAIN = "solo_chain"
    PAIR_CHAIN = "pair_chain"
    TRIPLE_CHAIN = "triple_chain"
    PLANE_SINGLES = "plane_singles"
    PLANE_PAIRS = "plane_pairs"
    FOUR_TWO_SINGLES = "four_two_singles"
    FOUR_TWO_PAIRS = "four_two_pairs"
    BOMB = "bomb"
    SKY_BOMB = "sky_bomb"
    ROCKET = "rocket"

    @property
    def is_bomb_class(self) -> bool:
        """Bomb-class plays beat any non-bomb play (§4) and count for ct's limit (§7)."""
        return self in BOMB_TYPES


BOMB_TYPES = frozenset({ComboType.BOMB, ComboType.SKY_BOMB, ComboType.ROCKET})


class BombClass(StrEnum):
    """How a bomb is made, in wildcard variants (§4)."""

    SOFT = "soft"  # natural cards completed with wildcards
    HARD = "hard"  # natural cards only
    MIXED = "mixed"  # four wildcards of both wildcard ranks (tiandi)
    PURE = "pure"  # four wildcards of one rank


@dataclass(frozen=True, slots=True)
class Reading:
    """One legal reading of a play.

    ``main`` is the rank that decides comparison: the highest card of a chain, the
    highest triple of a plane, the triple or four of a kicker type (§3).
    ``length`` is the number of ranks in the main part (5 for ``34567``, 2 for
    ``33344456``, 1 for single/pair/triple/kicker types/bombs).
    ``substitutes`` lists, sorted, the ranks that the play's wildcards stand for;
    empty for a natural play. It makes the reading reproducible in a replay.
    ``tier`` is the position of a bomb-class play on the rule set's bomb ladder
    (§4), ``-1`` for a non-bomb; it is derived data, set by the classifier.
    """

    type: ComboType
    main: Rank
    length: int
    size: int
    bomb_class: BombClass | None = None
    substitutes: tuple[Rank, ...] = ()
    tier: int = field(default=-1, compare=False)

    @property
    def is_bomb(self) -> bool:
        return self.type in BOMB_TYPES

    def key(self) -> tuple[ComboType, Rank, int, int, BombClass | None]:
        """What makes two readings the same for comparison and for listing."""
        return (self.type, self.main, self.length, self.size, self.bomb_class)

    def to_json(self, *, with_bomb_class: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type.value,
            "main": RANK_SYMBOLS[self.main],
            "length": self.length,
            "size": self.size,
        }
        if with_bomb_class and self.bomb_class is not None:
            out["bomb_class"] = self.bomb_class.value
        if self.substitutes:
            out["substitutes"] = "".join(RANK_SYMBOLS[r] for r in self.substitutes)
        return out
