"""Ranks, physical cards and the card notation of RULES.md §1.

Two views of cards run through the whole engine:

* ``RankCounts`` -- a 15-tuple with how many cards of each rank a hand or a play
  holds. Suits never matter for comparison (§1), so the rules engine works on
  counts only; this is what makes it fast.
* ``Card`` -- a physical card with its identity (rank, suit, copy), so that a
  deal can be audited card by card.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeAlias

RANK_SYMBOLS = "3456789TJQKA2BR"
"""Rank symbols low to high; ``B``/``R`` are the small/big jokers as in RLCard."""

NUM_RANKS = len(RANK_SYMBOLS)


class Rank(IntEnum):
    """A card rank, ordered low to high (§1)."""

    THREE = 0
    FOUR = 1
    FIVE = 2
    SIX = 3
    SEVEN = 4
    EIGHT = 5
    NINE = 6
    TEN = 7
    JACK = 8
    QUEEN = 9
    KING = 10
    ACE = 11
    TWO = 12
    BLACK_JOKER = 13
    RED_JOKER = 14

    @property
    def symbol(self) -> str:
        return RANK_SYMBOLS[self]

    @property
    def is_joker(self) -> bool:
        return self >= Rank.BLACK_JOKER

    @classmethod
    def from_symbol(cls, symbol: str) -> Rank:
        text = symbol.strip().upper()
        if text == "10":
            return cls.TEN
        index = RANK_SYMBOLS.find(text) if len(text) == 1 else -1
        if index < 0:
            raise CardNotationError(f"unknown rank {symbol!r} (expected one of {RANK_SYMBOLS})")
        return cls(index)


SUITED_RANKS = tuple(Rank(r) for r in range(Rank.TWO + 1))
"""Ranks 3..2: the ranks that have suits, that wildcards may stand for (§5)."""

CHAIN_RANKS = tuple(Rank(r) for r in range(Rank.ACE + 1))
"""Ranks 3..A: a chain never contains 2 or a joker (§3)."""

RankCounts: TypeAlias = tuple[int, ...]
"""How many cards of each rank, indexed by ``Rank`` (always ``NUM_RANKS`` long)."""

EMPTY_COUNTS: RankCounts = (0,) * NUM_RANKS


class CardNotationError(ValueError):
    """Card text that is not valid notation, or that the deck cannot hold."""


def parse_ranks(text: str) -> RankCounts:
    """Parse rank notation (``"33344456"``, ``"10 J Q K A"``, any order) into counts.

    Spaces and commas are ignored; ``10`` is accepted for ``T``. Suits are not part
    of this notation (see ``parse_cards`` for physical cards).
    """
    counts = [0] * NUM_RANKS
    cleaned = text.replace(" ", "").replace(",", "").upper()
    i = 0
    while i < len(cleaned):
        if cleaned.startswith("10", i):
            counts[Rank.TEN] += 1
            i += 2
            continue
        counts[Rank.from_symbol(cleaned[i])] += 1
        i += 1
    return tuple(counts)


def format_counts(counts: RankCounts) -> str:
    """Counts back to notation, low rank first: ``(3,1,0,...)`` -> ``"3334"``."""
    return "".join(RANK_SYMBOLS[r] * n for r, n in enumerate(counts) if n)


def counts_of(ranks: Iterable[Rank]) -> RankCounts:
    counts = [0] * NUM_RANKS
    for rank in ranks:
        counts[rank] += 1
    return tuple(counts)


def ranks_of(counts: RankCounts) -> tuple[Rank, ...]:
    """Counts to a sorted tuple of ranks, one entry per card."""
    return tuple(Rank(r) for r, n in enumerate(counts) for _ in range(n))


def add_counts(a: RankCounts, b: RankCounts) -> RankCounts:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def sub_counts(a: RankCounts, b: RankCounts) -> RankCounts:
    """``a - b``; raises ``ValueError`` if ``b`` is not contained in ``a``."""
    out = tuple(x - y for x, y in zip(a, b, strict=True))
    if min(out) < 0:
        raise ValueError("cards not contained in hand")
    return out


def contains(hand: RankCounts, play: RankCounts) -> bool:
    return all(h >= p for h, p in zip(hand, play, strict=True))


# --- physical cards -----------------------------------------------------------------

SUITS = ("S", "H", "C", "D", "*")
"""Spade, heart, club, diamond, and ct's fifth suit, the red star (§1)."""


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """One physical card: rank, suit (empty for jokers) and copy (0, or 1 for ct's
    second spade / second joker). Written ``S7``, ``*7``, ``S7'``, ``B``, ``R'``."""

    rank: Rank
    suit: str = ""
    copy: int = 0

    def __str__(self) -> str:
        mark = "'" * self.copy
        if self.rank.is_joker:
            return f"{self.rank.symbol}{mark}"
        return f"{self.suit}{self.rank.symbol}{mark}"

    @classmethod
    def parse(cls, text: str) -> Card:
        body = text.strip()
        copy = len(body) - len(body.rstrip("'"))
        body = body.rstrip("'")
        if body.upper() in ("B", "R"):
            return cls(Rank.from_symbol(body), "", copy)
        if len(body) < 2 or body[0].upper() not in SUITS:
            raise CardNotationError(f"not a physical card: {text!r} (e.g. S7, H10, *7, S7', B, R')")
        return cls(Rank.from_symbol(body[1:]), body[0].upper(), copy)


def parse_cards(text: str) -> tuple[Card, ...]:
    """Parse space-separated physical cards: ``"S7 H7 *7 S7' B R'"``."""
    return tuple(Card.parse(token) for token in text.replace(",", " ").split())


def format_cards(cards: Iterable[Card]) -> str:
    return " ".join(str(card) for card in sorted(cards))


def card_counts(cards: Iterable[Card]) -> RankCounts:
    return counts_of(card.rank for card in cards)
