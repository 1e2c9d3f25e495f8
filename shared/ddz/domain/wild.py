"""Plays that use wildcards, with every reading they allow (RULES.md §5).

A wildcard stands for any rank 3..2 (its own included), never for a joker. For each
combination type and main part the generator chooses which main cards are natural and
which are wildcards (every split is a different play: the hand keeps different cards),
then the kickers: natural ones, and wildcards. In tiandi the wildcards come in two
ranks; each way of taking them from the hand is its own play, with the same reading.

Plays made only of wildcards follow their own rule (§5): one rank reads as that rank
(``77`` is a pair of 7s, ``7777`` the pure bomb); in tiandi four wildcards of both ranks
are the mixed bomb, and any other two-rank play reads by its own ranks.

Kicker wildcards (**Decision**, docs/RULE_DECISIONS.md, §5): a wildcard used as a kicker stands
for its own rank when the kicker rules allow it, otherwise for the lowest rank that
they allow; the reading's ``substitutes`` record that choice. A kicker's rank never
changes the reading, so this only fixes which substitution is recorded.

A hand with wildcards has thousands of plays, so the generator works on rank counts
coded as ints (``lookup.ONE``): a play's cards are the sum of the codes of its main
part, its kickers and its wildcards, and its reading is looked up by the code of its
substitutes. Each part is built once and combined with the others by int additions.

This module is the way in and makes the plays of wildcards alone; the plays that mix
natural cards and wildcards are ``wild_mixed``'s, their kickers ``wild_kickers``'.
"""

from __future__ import annotations

from itertools import compress, product

from ddz.domain.cards import RankCounts
from ddz.domain.compare import beats
from ddz.domain.lookup import Lookup, code_of
from ddz.domain.move import Move, moves_of
from ddz.domain.natural import natural_readings
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.wild_mixed import Mixed, Shape


def wild_moves(
    hand: RankCounts, tb: Lookup, wild_ranks: tuple[int, ...], over: Reading | None
) -> list[Move]:
    """Every play that uses at least one of the hand's wildcards: all of them (``over``
    None) or those that beat ``over``."""
    plays = _Plays(hand, tb, wild_ranks, over, None, None)
    return moves_of(plays.codes, plays.readings)


def wild_readings(
    play: RankCounts, tb: Lookup, wild_ranks: tuple[int, ...], shape: Shape | None
) -> list[Reading]:
    """The readings of ``play`` (all of it) as a play with wildcards; only those of one
    ``shape`` (type, length, size) when given: checking one declared reading need not
    build every other one."""
    return _Plays(play, tb, wild_ranks, None, sum(play), shape).readings


class _Plays:
    """The plays that use wildcards, as two columns: the code of each play's cards and
    its reading; all of them or those that beat ``over``, of one ``size``, of one
    ``shape``."""

    def __init__(
        self,
        hand: RankCounts,
        tb: Lookup,
        wild_ranks: tuple[int, ...],
        over: Reading | None,
        size: int | None,
        shape: Shape | None,
    ) -> None:
        self.codes: list[int] = []
        self.readings: list[Reading] = []
        natural = list(hand)
        for w in wild_ranks:
            natural[w] = 0
        counts = [hand[w] for w in wild_ranks]
        if not sum(counts):
            return
        _all_wild(tb, wild_ranks, counts, over, size, self, shape)
        if any(natural):
            Mixed(
                tb, natural, wild_ranks, counts, over, size, self.codes, self.readings, shape
            ).run()
        if tb.may_repeat:
            self._drop_repeats()

    def _drop_repeats(self) -> None:
        """With a kicker flag two main parts can make the same play: keep the first."""
        seen: set[tuple[int, object]] = set()
        first = []
        for code, reading in zip(self.codes, self.readings, strict=True):
            key = (code, reading.key())
            first.append(key not in seen)
            seen.add(key)
        self.codes = list(compress(self.codes, first))
        self.readings = list(compress(self.readings, first))


def _all_wild(
    tb: Lookup,
    wild_ranks: tuple[int, ...],
    counts: list[int],
    over: Reading | None,
    size: int | None,
    plays: _Plays,
    shape: Shape | None = None,
) -> None:
    for split in product(*(range(n + 1) for n in counts)):
        total = sum(split)
        if not total or (size is not None and total != size):
            continue
        cards_list = [0] * 15
        for w, n in zip(wild_ranks, split, strict=True):
            cards_list[w] = n
        cards = tuple(cards_list)
        code = code_of(cards)
        own = tuple(r for r in range(15) for _ in range(cards[r]))
        readings: list[Reading | None] = []
        for natural in natural_readings(cards, tb):
            cls = BombClass.PURE if natural.type is ComboType.BOMB else None
            readings.append(
                tb.reading(natural.type, natural.main, natural.length, natural.size, cls, own)
            )
        used = [w for w, n in zip(wild_ranks, split, strict=True) if n]
        if len(used) >= 2 and total == 4:
            top = max(used)
            readings.append(tb.reading(ComboType.BOMB, top, 1, 4, BombClass.MIXED, (top,) * 4))
        for reading in readings:
            if reading is None or (over is not None and not beats(reading, over)):
                continue
            if shape is None or (reading.type, reading.length, reading.size) == shape:
                plays.codes.append(code)
                plays.readings.append(reading)
