"""One play a hand can make: the cards and the reading they are played as."""

from __future__ import annotations

from typing import Final, final

from ddz.domain.cards import RankCounts, format_counts
from ddz.domain.lookup import code_of, counts_of_code
from ddz.domain.readings import Reading


@final
class Move:
    """The physical ranks played (wildcards as their own rank) and their reading.

    The cards are kept as their code (``lookup.ONE``: a byte of count per rank), the form
    the move generators compute them in; ``cards`` unpacks them when asked. A hand with
    wildcards has thousands of plays, and unpacking each into 15 counts would cost more
    than finding the plays. Immutable, compared and hashed by value.

    A plain class rather than a named tuple: compiled (see setup.py), making one is a
    single allocation, where a tuple subclass goes through ``tuple.__new__``'s argument
    parsing, which was the largest single cost of a wildcard hand's move list."""

    __slots__ = ("cards_code", "reading")

    def __init__(self, cards_code: int, reading: Reading) -> None:
        self.cards_code: Final = cards_code
        self.reading: Final = reading

    @staticmethod
    def of(cards: RankCounts, reading: Reading) -> Move:
        """The move that plays ``cards`` (counts per rank) as ``reading``."""
        return Move(code_of(cards), reading)

    @property
    def cards(self) -> RankCounts:
        """The ranks played, as counts per rank."""
        return counts_of_code(self.cards_code)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Move)
            and self.cards_code == other.cards_code
            and self.reading == other.reading
        )

    def __hash__(self) -> int:
        return hash((self.cards_code, self.reading))

    def __repr__(self) -> str:
        return f"Move({format_counts(self.cards)!r}, {self.reading!r})"


def moves_of(codes: list[int], readings: list[Reading]) -> list[Move]:
    """The moves of parallel columns of card codes and readings."""
    # An index loop, not ``map(Move, codes, readings)``: compiled, it calls Move's
    # constructor directly, where ``map`` goes through the type's generic call.
    return [Move(codes[i], readings[i]) for i in range(len(codes))]
